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
