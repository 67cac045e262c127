package childproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// PidFile reads the pid on the first line of the pid file at path (postmaster.pid,
// pgbouncer.pid), and reports whether that process is alive. A stale file's pid may since name
// another process: check its Cmdline.
func PidFile(path string) (pid int, alive bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, Alive(pid)
}

// Cmdline is pid's command line with its NULs as spaces, "" when it is gone: a PostgreSQL
// process's title ("postgres: pgsaga: walsender …"), or the data directory or configuration
// file a server was started with.
func Cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}
