package pglocal

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// StopOnSignal makes the process stop c before dying from SIGINT or SIGTERM (or from sigs, when
// given): on the first such signal c is stopped, then the signal is raised again with its default
// action, so the process still ends the way it would have. A signal the process ignores (such as
// SIGINT in a shell's background job) stays ignored. release stops watching; it is idempotent.
// Meant for TestMain and commands that do no signal handling of their own.
func (c *Cluster) StopOnSignal(sigs ...os.Signal) (release func()) {
	if len(sigs) == 0 {
		sigs = []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	}
	var watched []os.Signal
	for _, sig := range sigs {
		if !signal.Ignored(sig) { // Notify would stop ignoring it
			watched = append(watched, sig)
		}
	}
	if len(watched) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, watched...)
	go func() {
		select {
		case sig := <-ch:
			if err := c.Stop(); err != nil {
				c.logger.Error("error stopping postgres on signal", "signal", sig, "error", err)
			}
			signal.Reset(sig)
			s, ok := sig.(syscall.Signal)
			if !ok {
				os.Exit(1)
			}
			_ = syscall.Kill(os.Getpid(), s)
			// The runtime acts on the signal from another thread; exit as a shell reports a
			// death by signal only if that somehow does not happen.
			time.Sleep(5 * time.Second)
			os.Exit(128 + int(s))
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
