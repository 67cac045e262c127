package main

import (
	"context"
	"errors"
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
	b, err := os.ReadFile(filepath.Join(e.single.Dir(), "data", "postmaster.pid"))
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

// freezePostgres stops (SIGSTOP) every process of the cluster: the postmaster first, so it
// forks no new child, then every process descended from it. PostgreSQL makes each child the
// leader of a process group of its own (so that the postmaster can signal a child's children),
// so the cluster is a tree of processes, not one group, and is walked through /proc. kill only
// queues the signal: the walk starts once the postmaster is seen stopped, so that no fork of
// its comes after the walk, and is repeated until it finds nothing new.
func (e *env) freezePostgres() error {
	pm, err := e.postmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("error stopping the postmaster (pid %d): %w", pm, err)
	}
	if err := waitStopped(pm, 5*time.Second); err != nil {
		return err
	}
	stopped := map[int]bool{}
	for {
		found := false
		for _, pid := range descendants(pm) {
			if stopped[pid] {
				continue
			}
			found, stopped[pid] = true, true
			// A child that exited meanwhile is no longer part of the cluster.
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("error stopping postgres process %d: %w", pid, err)
			}
		}
		if !found {
			return nil
		}
	}
}

// thawPostgres continues (SIGCONT) every process of the cluster, the postmaster last.
func (e *env) thawPostgres() error {
	pm, err := e.postmasterPID()
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range descendants(pm) {
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("error continuing postgres process %d: %w", pid, err))
		}
	}
	if err := syscall.Kill(pm, syscall.SIGCONT); err != nil {
		errs = append(errs, fmt.Errorf("error continuing the postmaster (pid %d): %w", pm, err))
	}
	return errors.Join(errs...)
}

// waitStopped waits until process pid is stopped (or dead), for at most timeout.
func waitStopped(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, ok := readProcStat(pid)
		if !ok || st.stoppedOrDead() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %s (state %s)", pid, timeout, st.state)
		}
		time.Sleep(time.Millisecond)
	}
}

// descendants returns the pids of every process descended from pid, read from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(p); ok {
			children[st.ppid] = append(children[st.ppid], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		for _, c := range children[next] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// procStat is what the harness reads of /proc/PID/stat.
type procStat struct {
	state      string // R, S, T (stopped), …
	ppid, pgrp int
}

// stoppedOrDead reports a process that runs no more: stopped by a signal, or exited and not yet
// reaped by its (stopped) parent.
func (st procStat) stoppedOrDead() bool { return st.state == "T" || st.state == "Z" || st.state == "X" }

// readProcStat reads /proc/PID/stat; false when the process is gone.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 3 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	pgrp, err2 := strconv.Atoi(fields[2])
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{state: fields[0], ppid: ppid, pgrp: pgrp}, true
}

// pausePostgres freezes every PostgreSQL process of the single server for d (SIGSTOP, then
// SIGCONT): connections stay open, statements hang, nothing fails, as in a long GC pause, a VM
// migration or a storage stall. It waits for a restart under way to finish.
func (e *env) pausePostgres(d time.Duration) error {
	e.db.Lock()
	defer e.db.Unlock()
	return e.pauseSingle(d)
}

// pausePrimary freezes the pair's primary node (its Patroni and its PostgreSQL) for d, shorter
// than the leader lock's TTL: a stall of the primary, not a failover. e.db must be held.
func (e *env) pausePrimary(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := e.pair.PartitionPrimary(ctx)
	if err != nil {
		return err
	}
	time.Sleep(d)
	return p.Heal()
}

// pauseSingle freezes the single server for d.
func (e *env) pauseSingle(d time.Duration) error {
	if err := e.freezePostgres(); err != nil {
		return errors.Join(err, e.thawPostgres())
	}
	time.Sleep(d)
	return e.thawPostgres()
}

// resumePostgres continues a frozen cluster; for clean-up paths.
func (e *env) resumePostgres() {
	_ = e.thawPostgres()
}

// restartPostgres shuts the server down (fast shutdown: sessions are ended, clients see "the
// database system is shutting down", then nothing), keeps it down for down, and starts it again
// on the same data and address.
func (e *env) restartPostgres(ctx context.Context, down time.Duration) error {
	e.db.Lock()
	defer e.db.Unlock()
	if err := e.single.Halt(); err != nil {
		return err
	}
	e.tl.add("postgres: halted")
	time.Sleep(down)
	if err := e.single.Restart(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	e.tl.add("postgres: restarted")
	return nil
}
