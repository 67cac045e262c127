package worker_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

// TestWorkerReconciles: with a Lister, the worker's periodic reconciliation stores the charge a
// failover left without a key (and not the one whose key completed) and sets the gauge.
func TestWorkerReconciles(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	s := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: s.Gateway()})
	require.NoError(t, err)
	client := svc.Client()
	pay := func() string {
		run := func(op, path, key, body string) []byte {
			res, err := client.Run(t.Context(), op, &saga.Request{Scope: scope, Key: key, Method: "POST", Path: path, Body: []byte(body)})
			require.NoError(t, err)
			require.Equal(t, 201, res.Response.Status, string(res.Response.Body))
			return res.Response.Body
		}
		inv := run(payments.OpCreateInvoice, "/invoices", uuid.NewString(), `{"amount": 5000, "currency": "USD"}`)
		id := strings.Split(string(inv), `"`)[3]
		key := uuid.NewString()
		run(payments.OpCreatePayment, "/payments", key, fmt.Sprintf(`{"invoice_id": %q, "amount": 2000}`, id))
		return key
	}
	pay()
	lost := pay()
	var lostRef string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT reference FROM pgsaga_call_journal WHERE key = $1`, lost).Scan(&lostRef))
	for _, sql := range []string{`DELETE FROM pgsaga_call WHERE key = $1`, `DELETE FROM pgsaga_key WHERE key = $1`} {
		_, err := db.Pool.Exec(t.Context(), sql, lost)
		require.NoError(t, err)
	}

	reg := prometheus.NewRegistry()
	startWorker(t, &worker.Config{Pool: db.Pool, Client: client, Registerer: reg,
		Lister: s, ReconcileInterval: time.Second, ReconcileWindow: time.Minute})
	waitFor(t, "the unmatched charge stored", 30*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_unmatched_charge`) == 1
	})
	var ref string
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT reference FROM pgsaga_unmatched_charge`).Scan(&ref))
	require.Equal(t, lostRef, ref)
	waitFor(t, "the gauge set", 10*time.Second, func() bool { return gaugeValue(t, reg, "pgsaga_unmatched_charges") == 1 })
}

// gaugeValue reads the gauge named name from reg (-1 when it has none).
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
