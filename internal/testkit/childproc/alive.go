package childproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Alive reports whether pid exists and has not exited: EPERM from kill(2) means it exists but
// belongs to someone else; a zombie (exited, not yet reaped) counts as gone. Without /proc it
// trusts kill(2).
func Alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	switch State(pid) {
	case "Z", "X":
		return false
	default:
		return true
	}
}

// State is the state letter of /proc/<pid>/stat ("R" running, "S" sleeping, "D" in I/O, "T"
// stopped, "Z" zombie), or "" when pid is gone or there is no /proc.
func State(pid int) string {
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
