package payments_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/saga"
)

// TestPaymentCrashAtEveryRecoveryPoint kills a payment at each point of its life (the goroutine
// running it ends where it stands; its open transaction is lost with its connection, and
// PostgreSQL aborts it), lets the lease expire and continues it, by the client's retry of the
// same request or by Resume (the worker, an operator). Whatever the point: one charge at the
// gateway, one payment row, the invoice paid once, a 201, and then replays of that 201.
func TestPaymentCrashAtEveryRecoveryPoint(t *testing.T) {
	t.Parallel()
	op := payments.OpCreatePayment
	cases := []struct {
		name  string
		crash string // "" = the execution finishes and its answer is lost
		// rp is the key's recovery point after the crash; "" = nothing was stored.
		rp string
		// charged is how many charges the crashed execution made.
		charged int
	}{
		{"payment row written, not committed", chaos.AfterStep(op, "payment_created"), "", 0},
		{"payment row committed", chaos.BeforeStep(op, "charged"), "payment_created", 0},
		{"dies as the charge is sent", chaos.ChargeBefore, "payment_created", 0},
		{"charge reached the provider", chaos.ChargeAfter, "payment_created", 1},
		{"charge answered, record not begun", chaos.BeforeStep(op, "result_recorded"), "payment_created", 1},
		{"result written, not committed", chaos.AfterStep(op, "result_recorded"), "payment_created", 1},
		{"finished, answer lost", "", "finished", 1},
	}
	for _, how := range []string{"client retry", "resume"} {
		for _, tc := range cases {
			if how == "resume" && tc.rp == "" {
				continue // nothing stored, nothing to resume: only a retry, which starts afresh
			}
			t.Run(how+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				e := newChaosEnv(t, chaosOpts{})
				inv := e.createInvoice(alice, 5000)
				key, body := newKey(), paymentBody(inv, 5000)
				if tc.crash != "" {
					e.points.Crash(tc.crash)
				}
				crashed, _, _ := e.runDirect(alice, key, body)
				require.Equal(t, tc.crash != "", crashed)
				require.Empty(t, e.points.Pending())
				require.Equal(t, tc.charged, e.sim.TotalCharges())

				k := e.key(alice, key)
				switch tc.rp {
				case "":
					require.Nil(t, k)
					require.Zero(t, e.count(`SELECT count(*) FROM payments`))
				case "finished":
					require.Equal(t, saga.KeyStatusCompleted, k.Status)
				default:
					require.Equal(t, saga.KeyStatusStarted, k.Status)
					require.Equal(t, tc.rp, k.RecoveryPoint)
					require.Nil(t, k.Response)
					require.Equal(t, 1, e.count(`SELECT count(*) FROM payments WHERE status = 'pending'`))
					require.Equal(t, 0, e.count(`SELECT paid FROM invoices WHERE id = $1`, inv))
					// The dead execution's lease is live: a retry now is told to come back.
					busy := e.do("POST", "/payments", alice, key, body)
					require.Equal(t, http.StatusConflict, busy.status, string(busy.body))
					require.Equal(t, "request_in_progress", busy.code(t))
					require.NotEmpty(t, busy.header.Get("Retry-After"))
					_, err := e.client.Resume(t.Context(), saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, key, nil)
					require.ErrorAs(t, err, new(*saga.InProgressError), "Resume must not take a live lease")
					e.expireLease(key)
				}

				var first *reply
				if how == "resume" {
					res, err := e.client.Resume(t.Context(), saga.Scope{Tenant: alice.tenant, Actor: alice.actor}, key, nil)
					require.NoError(t, err)
					require.Equal(t, tc.rp == "finished", res.Replayed)
					first = &reply{status: res.Response.Status, body: res.Response.Body}
				} else {
					first = e.do("POST", "/payments", alice, key, body)
					require.Equal(t, tc.rp == "finished", first.header.Get("Idempotent-Replayed") == "true")
				}
				require.Equal(t, http.StatusCreated, first.status, string(first.body))
				var payment map[string]any
				require.NoError(t, json.Unmarshal(first.body, &payment))
				e.requirePaidOnce(alice, inv, 5000, payment)
				e.requireReplays(alice, key, body, first)

				k = e.key(alice, key)
				require.Equal(t, saga.KeyStatusCompleted, k.Status)
				wantAttempts := 2
				if tc.rp == "" || tc.rp == "finished" {
					wantAttempts = 1
				}
				require.Equal(t, wantAttempts, k.Attempts)
			})
		}
	}
}
