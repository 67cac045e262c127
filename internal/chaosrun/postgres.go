package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// postmasterPID reads the running server's pid from its postmaster.pid file.
func (e *env) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(e.cluster.Dir(), "data", "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("error reading postmaster.pid: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		return 0, fmt.Errorf("error reading postmaster.pid: %w", err)
	}
	return pid, nil
}

// signalPostgres sends sig to every process of the cluster at once. pglocal starts the
// postmaster in a process group of its own, which every backend and auxiliary process it forks
// inherits, so one kill(-pgid) reaches them all, including one being forked.
func (e *env) signalPostgres(sig syscall.Signal) error {
	pid, err := e.postmasterPID()
	if err != nil {
		return err
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return fmt.Errorf("error reading the process group of the postmaster (pid %d): %w", pid, err)
	}
	if pgid != pid {
		return fmt.Errorf("the postmaster (pid %d) is not the leader of its process group (%d): cannot signal the cluster at once", pid, pgid)
	}
	if err := syscall.Kill(-pgid, sig); err != nil {
		return fmt.Errorf("error sending %s to the cluster's process group %d: %w", sig, pgid, err)
	}
	return nil
}

// pausePostgres freezes every PostgreSQL process for d (SIGSTOP, then SIGCONT): connections stay
// open, statements hang, nothing fails, as in a long GC pause, a VM migration or a storage
// stall. It waits for a restart under way to finish.
func (e *env) pausePostgres(d time.Duration) error {
	e.db.Lock()
	defer e.db.Unlock()
	if err := e.signalPostgres(syscall.SIGSTOP); err != nil {
		return err
	}
	time.Sleep(d)
	return e.signalPostgres(syscall.SIGCONT)
}

// resumePostgres continues a frozen cluster; for clean-up paths.
func (e *env) resumePostgres() {
	_ = e.signalPostgres(syscall.SIGCONT)
}

// restartPostgres shuts the server down (fast shutdown: sessions are ended, clients see "the
// database system is shutting down", then nothing), keeps it down for down, and starts it again
// on the same data and address.
func (e *env) restartPostgres(ctx context.Context, down time.Duration) error {
	e.db.Lock()
	defer e.db.Unlock()
	if err := e.cluster.Halt(); err != nil {
		return err
	}
	e.tl.add("postgres: halted")
	time.Sleep(down)
	if err := e.cluster.Restart(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	e.tl.add("postgres: restarted")
	return nil
}
