package pgcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a child started by startLocked.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd has exited and err is set
	err    error         // cmd.Wait's result
}

// startLocked starts cmd from a goroutine locked to its OS thread, and keeps that thread until
// cmd exits: the parent-death signal fires when the thread that forked the child exits, and the
// Go runtime ends a thread when a goroutine locked to it returns without unlocking.
func startLocked(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			p.err = cmd.Wait()
		}
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process's group (it leads one) and waits for it to exit.
func (p *process) kill() {
	if p.running() {
		_ = syscall.Kill(-p.pid(), syscall.SIGCONT) // a frozen group dies as well, but resume it for its log
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	}
	<-p.exited
}

// childEnv is the environment of etcd, Patroni and PostgreSQL: PATH, a neutral locale, HOME, and
// none of the PG*, ETCD* or PATRONI* variables of the caller, which would change what they do.
func childEnv(home string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C.UTF-8", "LANG=C.UTF-8", "HOME=" + home}
	if tz, ok := os.LookupEnv("TZ"); ok {
		env = append(env, "TZ="+tz)
	}
	return env
}

// postmasterPID reads the pid in dataDir's postmaster.pid, and reports whether that process runs
// a postgres on dataDir (a stale file or a reused pid does not count).
func postmasterPID(dataDir string) (int, bool) {
	b, err := os.ReadFile(dataDir + "/postmaster.pid")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(dataDir)) {
		return 0, false
	}
	return pid, true
}

// children lists pid's child processes from /proc.
func children(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// cmdline is pid's command line with its NULs as spaces ("" when it is gone): a PostgreSQL
// process's title ("postgres: pgsaga: walsender …").
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// procState is the state letter of /proc/pid/stat ("R", "S", "T" stopped, "Z"), "" when gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// "pid (comm) state …": comm may hold spaces and parentheses, so find the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ""
	}
	return string(b[i+2])
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	s := procState(pid)
	return s != "" && s != "Z" && s != "X"
}

// freezePostgres stops (SIGSTOP) the postmaster pm, then every child it has, and returns them
// all once they are stopped. Each PostgreSQL child leads a process group of its own (PostgreSQL
// makes them group leaders), so no one signal reaches them all; the postmaster, stopped first,
// forks no more meanwhile.
func freezePostgres(pm int) ([]int, error) {
	if err := syscall.Kill(pm, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("stopping postmaster %d: %w", pm, err)
	}
	if !waitFor(5*time.Second, func() bool { return procState(pm) != "R" && procState(pm) != "S" && procState(pm) != "D" }) {
		return nil, fmt.Errorf("postmaster %d not stopped 5s after SIGSTOP", pm)
	}
	procs := append([]int{pm}, children(pm)...)
	for _, pid := range procs[1:] {
		_ = syscall.Kill(pid, syscall.SIGSTOP) // ESRCH: it exited meanwhile
	}
	for _, pid := range procs {
		if !waitFor(5*time.Second, func() bool { s := procState(pid); return s != "R" && s != "S" && s != "D" }) {
			return procs, fmt.Errorf("process %d not stopped 5s after SIGSTOP", pid)
		}
	}
	return procs, nil
}

// signalAll sends sig to every process in pids, ignoring those already gone.
func signalAll(pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
}

// waitFor polls cond every 20ms until it holds or timeout passes, and reports whether it held.
// For processes that are not our children, which cannot be waited for.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// signalGroup sends sig to process group pgid and, for SIGSTOP, waits until every process of
// the group listed in pids is stopped, so a fault is in place when the call returns. For
// Patroni, which leads a group of its own.
func signalGroup(pgid int, sig syscall.Signal, pids []int) error {
	if err := syscall.Kill(-pgid, sig); err != nil {
		return fmt.Errorf("sending %s to process group %d: %w", sig, pgid, err)
	}
	if sig != syscall.SIGSTOP {
		return nil
	}
	for _, pid := range pids {
		if !waitFor(5*time.Second, func() bool { s := procState(pid); return s == "T" || s == "" || s == "Z" }) {
			return fmt.Errorf("process %d not stopped 5s after SIGSTOP", pid)
		}
	}
	return nil
}
