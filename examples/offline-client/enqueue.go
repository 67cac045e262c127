package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/client"
)

// Default identity of the terminal, sent as X-Tenant-ID and X-Actor-ID: a server run with
// --insecure-scope-headers takes the scope from them; one that authenticates API keys takes it
// from the key ($PGSAGA_API_KEY at flush) and ignores them.
const (
	defaultTenant = "tenant-1"
	defaultActor  = "actor-1"
)

// paymentRequest is the body of POST /payments.
type paymentRequest struct {
	InvoiceID string `json:"invoice_id"`
	Amount    int64  `json:"amount"`
}

func newEnqueueCommand(root *rootFlags) *cobra.Command {
	var (
		invoice, tenant, actor string
		amount                 int64
	)
	cmd := &cobra.Command{
		Use:   "enqueue --invoice ID --amount N [--tenant T --actor A]",
		Short: "Queue a payment intent and print its idempotency key",
		Long: `enqueue creates a payment intent (POST /payments with body
{"invoice_id": ID, "amount": N}) and its idempotency key now, stores both in
the queue file (on disk before the command returns), and prints the key alone
on one line. It needs no server. --tenant and --actor are sent as X-Tenant-ID
and X-Actor-ID, which only a server run with --insecure-scope-headers reads; a
server that authenticates API keys takes them from the key flush sends
($PGSAGA_API_KEY). The queue file is created readable by its owner only, and
a queue file that others may read or write is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if invoice == "" {
				return errors.New("--invoice must not be empty")
			}
			if amount <= 0 {
				return errors.New("--amount must be a positive number of minor units")
			}
			intent, err := client.NewIntent(http.MethodPost, "/payments",
				paymentRequest{InvoiceID: invoice, Amount: amount},
				&client.IntentOpts{Header: http.Header{"X-Tenant-ID": {tenant}, "X-Actor-ID": {actor}}})
			if err != nil {
				return err
			}
			return root.withQueue(func(q *client.Queue) error {
				if err := q.Enqueue(intent); err != nil {
					return fail(err)
				}
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), intent.Key); err != nil {
					return fail(err)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&invoice, "invoice", "", "the invoice to pay (required)")
	cmd.Flags().Int64Var(&amount, "amount", 0, "the amount in minor units, > 0 (required)")
	cmd.Flags().StringVar(&tenant, "tenant", defaultTenant, "sent as X-Tenant-ID")
	cmd.Flags().StringVar(&actor, "actor", defaultActor, "sent as X-Actor-ID")
	_ = cmd.MarkFlagRequired("invoice")
	_ = cmd.MarkFlagRequired("amount")
	return cmd
}
