package main

import (
	"bufio"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/client"
)

func newListCommand(root *rootFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Print the queued intents, one per line",
		Long: `list prints one line per queued intent, in submission order:

  KEY METHOD PATH STATE

STATE is "pending" (waiting, or sent without a definitive answer) or "held"
(rejected definitively by the server and kept for review). list prints nothing
when the queue is empty.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return root.withQueue(func(q *client.Queue) error {
				items, err := q.List()
				if err != nil {
					return fail(err)
				}
				out := bufio.NewWriter(cmd.OutOrStdout())
				for _, item := range items {
					fmt.Fprintln(out, listLine(item))
				}
				if err := out.Flush(); err != nil {
					return fail(err)
				}
				return nil
			})
		},
	}
}

func listLine(item client.QueuedIntent) string {
	return fmt.Sprintf("%s %s %s %s", item.Intent.Key, item.Intent.Method, item.Intent.Path, item.State)
}
