// Command offline-client is a point-of-sale style client for the example
// payments API: it queues payment intents in a local file while offline and
// submits them later, so that each intent is charged exactly once however
// often the network fails or the process is killed.
//
//	offline-client --queue FILE enqueue --invoice ID --amount N [--tenant T --actor A]
//	offline-client --queue FILE flush --server URL     (sends $PGSAGA_API_KEY as a Bearer token)
//	offline-client --queue FILE list
//
// The queue file is created with mode 0600; one that others may read or write
// is refused.
//
// Exit status: 0 on success, 1 on failure (one line on stderr), 2 on bad
// usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var failed *failure
	if errors.As(err, &failed) {
		fmt.Fprintf(stderr, "offline-client: %v\n", failed.err)
		return 1
	}
	// Anything cobra or a command rejects before doing work is bad usage.
	fmt.Fprintf(stderr, "offline-client: %v (see offline-client --help)\n", err)
	return 2
}

// failure marks an error that happened while doing the work (exit 1), as
// opposed to bad usage (exit 2).
type failure struct{ err error }

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

func fail(err error) error { return &failure{err: err} }
