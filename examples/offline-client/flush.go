package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/client"
)

// envAPIKey names the environment variable holding the API key flush sends.
const envAPIKey = "PGSAGA_API_KEY"

func newFlushCommand(root *rootFlags) *cobra.Command {
	var (
		server                                        string
		maxAttempts                                   int
		maxElapsed, requestTimeout, baseDelay, maxCap time.Duration
		verbose                                       bool
	)
	cmd := &cobra.Command{
		Use:   "flush --server URL",
		Short: "Submit the pending intents in order, each exactly once",
		Long: `flush submits the pending intents in the order they were enqueued, each with
its own idempotency key. It retries network errors, 5xx, 429 and 409
request_in_progress with exponential backoff and full jitter, honouring
Retry-After; it never retries 400, 422 or other 4xx answers.

An intent leaves the pending state only after a definitive answer:
  2xx      removed from the queue     KEY STATUS payment ID [replayed]
  4xx      moved to held for review   KEY STATUS held: CODE
("replayed" means the server had already executed this intent and returned the
stored answer.) When an intent's outcome stays unknown after its retry budget
(--max-attempts, --max-elapsed), flush prints
  KEY STATUS pending: outcome unknown        (STATUS is - when nothing answered)
and stops there, so that later intents never overtake it; run flush again later.

The server authenticates each request by an API key (pgsaga apikey create):
flush sends $PGSAGA_API_KEY as "Authorization: Bearer <key>" with every
request. The key is read when flush runs and never stored in the queue.

Exit status: 0 when no intent is left pending (held intents do not count: they
are reported above and shown by list), 1 otherwise, with one line on stderr.
Killing flush at any moment is safe: the next flush resubmits with the same
keys and the server de-duplicates.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := slog.New(slog.DiscardHandler)
			if verbose {
				logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			var header http.Header
			if key := strings.TrimSpace(os.Getenv(envAPIKey)); key != "" {
				header = http.Header{"Authorization": {"Bearer " + key}}
			}
			c, err := client.NewClient(&client.Config{
				BaseURL:        server,
				Header:         header,
				MaxAttempts:    maxAttempts,
				MaxElapsed:     maxElapsed,
				RequestTimeout: requestTimeout,
				BaseDelay:      baseDelay,
				MaxDelay:       maxCap,
				Logger:         logger,
			})
			if err != nil {
				return err
			}
			return root.withQueue(func(q *client.Queue) error {
				out := cmd.OutOrStdout()
				res, err := q.Flush(cmd.Context(), c, func(item client.QueuedIntent, r *client.Result, err error) {
					printFlushLine(out, item, r, err)
				})
				if err != nil {
					return fail(fmt.Errorf("%d intent(s) still pending; %w", res.Pending, err))
				}
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "the payments API, e.g. http://127.0.0.1:8080 (required)")
	f.IntVar(&maxAttempts, "max-attempts", 8, "requests per intent before its outcome is declared unknown")
	f.DurationVar(&maxElapsed, "max-elapsed", 30*time.Second, "time per intent before its outcome is declared unknown")
	f.DurationVar(&requestTimeout, "request-timeout", 10*time.Second, "time one request may take")
	f.DurationVar(&baseDelay, "base-delay", 200*time.Millisecond, "ceiling of the first backoff delay (doubles per retry)")
	f.DurationVar(&maxCap, "max-delay", 5*time.Second, "largest backoff ceiling (a server's Retry-After may be longer)")
	f.BoolVar(&verbose, "verbose", false, "log each retry on stderr")
	_ = cmd.MarkFlagRequired("server")
	return cmd
}

// printFlushLine prints what happened to one intent; see the command help
// for the format.
func printFlushLine(out io.Writer, item client.QueuedIntent, r *client.Result, err error) {
	status := "-"
	if r != nil && r.Status != 0 {
		status = strconv.Itoa(r.Status)
	}
	key := item.Intent.Key
	switch {
	case err == nil:
		var payment struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(r.Body, &payment)
		if payment.ID == "" {
			payment.ID = "-"
		}
		replayed := ""
		if r.Replayed {
			replayed = " replayed"
		}
		fmt.Fprintf(out, "%s %s payment %s%s\n", key, status, payment.ID, replayed)
	case item.State == client.QueueStateHeld:
		code := item.LastCode
		switch {
		case code != "":
		case errors.Is(err, client.ErrInvalidIntent):
			code = "invalid_intent"
		default:
			code = "-"
		}
		fmt.Fprintf(out, "%s %s held: %s\n", key, status, code)
	default:
		fmt.Fprintf(out, "%s %s pending: outcome unknown\n", key, status)
	}
}
