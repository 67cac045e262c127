package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// chargeList is a provider's list of charges.
type chargeList []gateway.Charge

func (l chargeList) ListCharges(_ context.Context, since time.Time) iter.Seq2[gateway.Charge, error] {
	return func(yield func(gateway.Charge, error) bool) {
		for _, c := range l {
			if !c.CreatedAt.Before(since) && !yield(c, nil) {
				return
			}
		}
	}
}

// chargeOp charges under the default reference and records the charge "ch_paid".
func chargeOp() *phases.Operation {
	return &phases.Operation{Name: "charge", Steps: []phases.Step{
		phases.Call("charged", func(_ context.Context, run *phases.Run) error {
			run.RecordCall(phases.CallOutcomeSucceeded, "ch_paid")
			return nil
		}),
		phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]bool{"ok": true})
		}),
	}}
}

// TestReconcile: a charge whose key completed is accounted for, one no key journaled is
// reported, one line each or as JSON; the exit status says whether anything is unmatched.
func TestReconcile(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{chargeOp()}})
	require.NoError(t, err)
	scope := saga.Scope{Tenant: "t1", Actor: "alice"}
	_, err = client.Run(t.Context(), "charge", &saga.Request{Scope: scope, Key: "paid-key-1", Method: "POST", Path: "/charges", Body: []byte(`{}`)})
	require.NoError(t, err)

	now := time.Now().UTC().Truncate(time.Second)
	paid := gateway.Charge{ID: "ch_paid", Amount: 500, Currency: "USD", Status: gateway.StatusSucceeded, CreatedAt: now.Add(-time.Minute),
		Reference: phases.DefaultReference("t1", "alice", "paid-key-1", "charge", "charged")}
	lost := gateway.Charge{ID: "ch_lost", Reference: "ref_lost", Amount: 700, Currency: "EUR", Status: gateway.StatusSucceeded, CreatedAt: now.Add(-2 * time.Hour)}
	app := func(charges chargeList) *cli.App {
		return &cli.App{Build: func(_ context.Context, p *cli.BuildParams) (*cli.Service, error) {
			c, err := saga.NewClient(&saga.Config{DB: p.Pool, Operations: []*phases.Operation{chargeOp()}})
			return &cli.Service{Client: c, Lister: charges}, err
		}}
	}
	run := func(a *cli.App, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := cli.Run(t.Context(), a, append(args, "--database-url", db.URL), &cli.Env{Stdout: &out, Stderr: &errOut})
		return code, out.String(), errOut.String()
	}
	both := app(chargeList{lost, paid})

	code, out, errOut := run(both, "reconcile", "--since", "3h", "--json")
	require.Equal(t, cli.ExitFailure, code, errOut)
	var got struct {
		Checked   int              `json:"checked"`
		Unmatched []map[string]any `json:"unmatched"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, 2, got.Checked)
	require.Equal(t, []map[string]any{{"provider_id": "ch_lost", "reference": "ref_lost", "amount": float64(700), "currency": "EUR",
		"status": "succeeded", "created_at": lost.CreatedAt.Format(time.RFC3339)}}, got.Unmatched)
	require.Contains(t, errOut, "1 of 2 charges")

	code, out, _ = run(both, "reconcile", "--since", now.Add(-3*time.Hour).Format(time.RFC3339))
	require.Equal(t, cli.ExitFailure, code)
	require.Equal(t, "ch_lost ref_lost 700 EUR succeeded "+lost.CreatedAt.Format(time.RFC3339)+"\n", out)

	// The lost charge is older than the window: nothing unmatched.
	code, out, errOut = run(both, "reconcile", "--since", "1h", "--json")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.JSONEq(t, `{"checked":1,"unmatched":[]}`, out)
	code, out, errOut = run(both, "reconcile", "--since", "1h")
	require.Equal(t, cli.ExitOK, code, errOut)
	require.Empty(t, out)
	require.Contains(t, errOut, "none unmatched")

	for _, bad := range [][]string{{"reconcile"}, {"reconcile", "--since", "yesterday"}, {"reconcile", "--since", "-1h"}} {
		code, _, errOut := run(both, bad...)
		require.Equal(t, cli.ExitUsage, code, "%v: %s", bad, errOut)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
	}
	code, _, errOut = run(&cli.App{Build: func(_ context.Context, p *cli.BuildParams) (*cli.Service, error) {
		c, err := saga.NewClient(&saga.Config{DB: p.Pool, Operations: []*phases.Operation{chargeOp()}})
		return &cli.Service{Client: c}, err
	}}, "reconcile", "--since", "1h")
	require.Equal(t, cli.ExitFailure, code)
	require.Contains(t, errOut, "cannot list its charges")
}
