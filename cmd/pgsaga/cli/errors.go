package cli

import (
	"errors"
	"fmt"
	"strings"
)

// Exit codes of every command.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailure: the command ran and failed (no such key, database unreachable, a refused
	// resume, a demo scenario that did not hold).
	ExitFailure = 1
	// ExitUsage: the command line was wrong (unknown command or flag, bad flag value, missing
	// required flag or argument, no database URL) and nothing was done.
	ExitUsage = 2
)

// usageError is a bad command line: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// UsageErrorf makes the error of a bad command line, for an application's own commands
// (App.Commands): the command exits 2 (ExitUsage) and the message, printed on one line, ends
// with a pointer to --help.
func UsageErrorf(format string, args ...any) error { return usageErrorf(format, args...) }

// exitCode maps an error returned by a command to the process's exit status.
func exitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var usage *usageError
	if errors.As(err, &usage) {
		return ExitUsage
	}
	return ExitFailure
}

// oneLine makes an error message fit on one line of stderr: a multi-line error (a server log
// tail, a joined error) is folded, with its lines separated by " | ".
func oneLine(msg string) string {
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, " | ")
}
