package pglocal

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// StopOnSignal makes the process stop c before dying from SIGINT or SIGTERM (or from sigs, when
// given): on the first such signal c is stopped, then the signal is raised again with its default
// action, so the process still ends the way it would have. release stops watching; it is
// idempotent. Meant for TestMain and commands that do no signal handling of their own.
func (c *Cluster) StopOnSignal(sigs ...os.Signal) (release func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	}
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case sig := <-ch:
			if err := c.Stop(); err != nil {
				c.logger.Error("error stopping postgres on signal", "signal", sig, "error", err)
			}
			signal.Reset(sig)
			if s, ok := sig.(syscall.Signal); ok {
				_ = syscall.Kill(os.Getpid(), s)
			}
			// Not reached when the default action ends the process; exit like the shell would.
			os.Exit(1)
		case <-done:
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
	}
}
