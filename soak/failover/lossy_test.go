package failover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/reconcile"
	"github.com/pgsaga/pgsaga/saga"
)

// In asynchronous mode a failover can lose what the old primary acknowledged, and
// pgcluster.LossyFailover does so on purpose: a payment answered 201 before the failover is gone
// after it (its key and its payment row), while the gateway keeps the charge. The client that
// got its 201 will not retry; only reconciliation against the provider finds the charge.
func TestLossyFailoverLosesACompletedKey(t *testing.T) {
	healthyIn(t, false)
	_, pool := newDatabase(t)
	s := newService(t, pool)
	inv := s.invoice(t, 5000)
	key, body := uuid.NewString(), `{"invoice_id": "`+inv+`", "amount": 2000}`

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	old, err := cluster.Primary(ctx)
	require.NoError(t, err)
	var answered *answer
	next, err := cluster.LossyFailover(ctx, func(context.Context) error {
		a, err := post(s.url, "/payments", key, body)
		if err != nil {
			return err
		}
		if a.status != http.StatusCreated {
			return fmt.Errorf("the payment was answered %s", a)
		}
		answered = a
		return nil
	})
	require.NoError(t, err)
	require.NotEqual(t, old, next)
	var payment struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(answered.body, &payment))

	// The pool reconnects to the new primary, which never had the key.
	var getErr error
	waitUntil(t, 30*time.Second, "the key to be read on the new primary", func() bool {
		_, getErr = s.client.KeyGet(ctx, saga.Scope{Tenant: "t1", Actor: "alice"}, key)
		return errors.Is(getErr, saga.ErrKeyNotFound) || getErr == nil
	})
	require.ErrorIs(t, getErr, saga.ErrKeyNotFound, "the completed key was lost with the old primary's commits")
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE id = $1`, payment.ID).Scan(&rows))
	require.Zero(t, rows, "the payment row was lost too")
	require.Equal(t, 1, s.sim.ChargesFor("payment:"+payment.ID), "the provider kept the charge")

	// The old primary rejoins rewound: the loss is everywhere.
	_, standby, err := cluster.WaitHealthy(ctx)
	require.NoError(t, err)
	require.Equal(t, old, standby)
}

// In asynchronous mode money still moves once when a failover loses acknowledged commits, and
// nothing is lost silently. The provider here has inquiry and no idempotency keys (the worst
// case: every request it receives is a charge). Two payments are answered 201 just before a
// lossy failover, which forgets both:
//   - the client of the first lost its answer and retries with the same key: the re-execution
//     makes the same payment id and reference (both derive from the intent), finds the first
//     charge by inquiry, and answers with it; one charge;
//   - the client of the second got its 201 and never retries: reconciliation reports its charge,
//     and only its.
func TestAsyncFailoverMovesMoneyOnce(t *testing.T) {
	healthyIn(t, false)
	_, pool := newDatabase(t)
	off := false
	provider := sim.New(&sim.Config{Idempotency: &off})
	s := newServiceWith(t, pool, provider, 0)
	inv := s.invoice(t, 5000)
	retried, forgotten := uuid.NewString(), uuid.NewString()
	bodyOf := func(amount int) string { return `{"invoice_id": "` + inv + `", "amount": ` + itoa(amount) + `}` }

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	start := time.Now().Add(-time.Minute)
	answers := map[string]*answer{}
	_, err := cluster.LossyFailover(ctx, func(context.Context) error {
		for key, amount := range map[string]int{retried: 1000, forgotten: 2000} {
			a, err := post(s.url, "/payments", key, bodyOf(amount))
			if err != nil {
				return err
			}
			if a.status != http.StatusCreated {
				return fmt.Errorf("the payment was answered %s", a)
			}
			answers[key] = a
		}
		return nil
	})
	require.NoError(t, err)
	paymentOf := func(a *answer) (p struct{ ID, Reference string }) {
		var body struct {
			ID string `json:"id"`
		}
		require.NoError(t, json.Unmarshal(a.body, &body))
		return struct{ ID, Reference string }{body.ID, "payment:" + body.ID}
	}
	first, lost := paymentOf(answers[retried]), paymentOf(answers[forgotten])
	waitUntil(t, 30*time.Second, "the lost key to be gone on the new primary", func() bool {
		_, err := s.client.KeyGet(ctx, saga.Scope{Tenant: "t1", Actor: "alice"}, retried)
		return errors.Is(err, saga.ErrKeyNotFound)
	})
	require.Equal(t, 1, provider.ChargesFor(first.Reference))
	require.Equal(t, 1, provider.ChargesFor(lost.Reference))

	// The client whose answer was lost retries, through the failover's 503s.
	var again *answer
	waitUntil(t, time.Minute, "the retry to be answered", func() bool {
		a, err := post(s.url, "/payments", retried, bodyOf(1000))
		if err != nil || a.status == http.StatusServiceUnavailable || a.status == http.StatusConflict {
			return false
		}
		again = a
		return true
	})
	require.Equal(t, http.StatusCreated, again.status, again.String())
	require.Equal(t, first, paymentOf(again), "the same payment id and reference")
	require.Equal(t, string(answers[retried].body), string(again.body), "here even the same bytes: nothing in the answer depends on when it ran")
	require.Equal(t, 1, provider.ChargesFor(first.Reference), "the first charge was found, not made again")
	require.Len(t, provider.Ledger().Charges, 2, "two intents, two charges")

	// The client that kept its 201 never retries: reconciliation reports that charge, alone.
	r, err := reconcile.New(&reconcile.Config{Client: s.client, Lister: provider})
	require.NoError(t, err)
	res, err := r.Check(ctx, start)
	require.NoError(t, err)
	require.Equal(t, 2, res.Checked)
	require.Len(t, res.Unmatched, 1)
	require.Equal(t, lost.Reference, res.Unmatched[0].Reference)
	require.Equal(t, int64(2000), res.Unmatched[0].Amount)

	_, _, err = cluster.WaitHealthy(ctx)
	require.NoError(t, err)
}
