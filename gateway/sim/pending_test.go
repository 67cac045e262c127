package sim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

func decodeCharge(t *testing.T, raw []byte) gateway.Charge {
	t.Helper()
	var c gateway.Charge
	require.NoError(t, json.Unmarshal(raw, &c), string(raw))
	return c
}

// A pending charge answers 201 pending, shows pending everywhere for PendingFor, then turns
// final; a repeated key replays the first (pending) answer, as Stripe does.
func TestPendingOverHTTP(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		amount int
		final  gateway.Status
	}{
		"turns succeeded": {100, gateway.StatusSucceeded},
		"turns declined":  {5000, gateway.StatusDeclined},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := sim.New(&sim.Config{Faults: sim.Faults{Pending: 1, DeclineOver: 1000}, PendingFor: time.Second})
			srv := newServer(t, s)
			key := map[string]string{"Idempotency-Key": "payment:p-" + name}
			body := `{"amount":` + map[int]string{100: "100", 5000: "5000"}[tc.amount] + `,"currency":"USD","reference":"payment:p"}`

			status, raw, err := post(t, srv.URL+"/charges", body, key)
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, status)
			created := decodeCharge(t, raw)
			require.Equal(t, gateway.StatusPending, created.Status)

			status, raw = get(t, srv.URL+"/charges/"+created.ID)
			require.Equal(t, http.StatusOK, status)
			require.Equal(t, created, decodeCharge(t, raw))
			require.Equal(t, gateway.StatusPending, s.Ledger().Charges[0].Status)
			found, err := s.Gateway().Inquire(context.Background(), "payment:p")
			require.NoError(t, err)
			require.Equal(t, []gateway.Charge{created}, found)

			require.Eventually(t, func() bool {
				_, raw := get(t, srv.URL+"/charges/"+created.ID)
				return decodeCharge(t, raw).Status == tc.final
			}, 5*time.Second, 20*time.Millisecond)
			require.Equal(t, tc.final, s.Ledger().Charges[0].Status)

			_, raw, err = post(t, srv.URL+"/charges", body, key)
			require.NoError(t, err)
			require.Equal(t, created, decodeCharge(t, raw), "a repeated key replays the first answer")
			require.Equal(t, 1, s.TotalCharges(), "a pending charge is a charge")
		})
	}
}

func TestPendingThroughAdapters(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{PendingFor: time.Second})
	for name, gw := range map[string]gateway.Gateway{"in-process": s.Gateway(), "HTTP": newClient(t, s)} {
		s.PendingNext(1)
		p := chargeParams("payment:pending-"+name, 100)
		charge, err := gw.Send(context.Background(), p)
		require.NoError(t, err, name)
		require.Equal(t, gateway.StatusPending, charge.Status, name)

		found, err := gw.Inquire(context.Background(), p.Reference)
		require.NoError(t, err)
		require.Equal(t, []gateway.Charge{*charge}, found, name)
		got, err := gw.Get(context.Background(), charge.ID)
		require.NoError(t, err)
		require.Equal(t, charge, got, name)

		require.Eventually(t, func() bool {
			got, err := gw.Get(context.Background(), charge.ID)
			return err == nil && got.Status == gateway.StatusSucceeded
		}, 5*time.Second, 20*time.Millisecond, name)
	}
}

func TestGetUnknownCharge(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	srv := newServer(t, s)
	status, raw := get(t, srv.URL+"/charges/ch_missing")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, string(raw), `"not_found"`)

	for name, gw := range map[string]gateway.Gateway{"in-process": s.Gateway(), "HTTP": newClient(t, s)} {
		_, err := gw.Get(context.Background(), "ch_missing")
		require.ErrorIs(t, err, gateway.ErrNotFound, name)
	}
}
