package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/client"
)

// rootFlags are the flags every command shares.
type rootFlags struct {
	queue string
}

func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	flags := &rootFlags{}
	root := &cobra.Command{
		Use:   "offline-client --queue FILE <command>",
		Short: "Queue payment intents offline and submit each exactly once later",
		Long: `offline-client queues payment intents in a local file and submits them later.

Each intent gets its idempotency key when it is enqueued, and the key is stored
with it. flush reuses that key on every attempt, across retries, restarts and
kill -9, so the server de-duplicates resubmissions: killing flush at any moment
and running it again never submits an intent twice.

Queue states: "pending" intents wait to be submitted (or were sent without a
definitive answer); "held" intents were rejected definitively by the server
(e.g. 422, 402, 404) and are kept for review instead of being dropped.

Exit status: 0 on success, 1 on failure (one line on stderr), 2 on bad usage.`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("missing command: enqueue, flush or list")
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&flags.queue, "queue", "", "the queue file (created if missing; one process at a time)")
	_ = root.MarkPersistentFlagRequired("queue")

	root.AddCommand(
		newEnqueueCommand(flags),
		newFlushCommand(flags),
		newListCommand(flags),
	)
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}

// withQueue runs fn on the queue named by --queue, closed when fn returns: the queue is one
// process's at a time.
func (f *rootFlags) withQueue(fn func(*client.Queue) error) error {
	if f.queue == "" {
		return errors.New("--queue must not be empty")
	}
	q, err := client.OpenQueue(f.queue, nil)
	if err != nil {
		return fail(err)
	}
	defer q.Close()
	return fn(q)
}
