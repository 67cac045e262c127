package saga_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// declaredWindow is a gateway whose declared in-flight window is set by the test: a provider
// whose settings change, or another process configured with another window.
type declaredWindow struct {
	gateway.Gateway
	window atomic.Int64
}

func (g *declaredWindow) Capabilities() gateway.Capabilities {
	caps := g.Gateway.Capabilities()
	caps.MaxInFlight = time.Duration(g.window.Load())
	return caps
}

// An execution sends a charge under a declared in-flight window of 1.5s and dies at once; its
// request is held 1.2s before it lands. The provider's declared window then shrinks to 100ms.
// The retry that takes the key over once the lease (1s) has ended must not trust an empty
// inquiry after the new, shorter window: the window the dead execution sent under is in the
// journal, and the retry waits by it. One charge, and the payment completes with it.
func TestShrunkWindowDoesNotMakeALandingRequestLookUncharged(t *testing.T) {
	t.Parallel()
	const hold, declared, shrunk = 1200 * time.Millisecond, 1500 * time.Millisecond, 100 * time.Millisecond
	off := false
	provider := sim.New(&sim.Config{Idempotency: &off, Faults: sim.Faults{LatencyBefore: hold}})
	gw := &declaredWindow{Gateway: provider.Gateway()}
	gw.window.Store(int64(declared))
	const op, sent = "windowed_charge", "windowed_charge/sent"
	var h *harness
	ops := func(*harness) []*phases.Operation {
		return []*phases.Operation{{
			Name: op,
			Steps: []phases.Step{
				phases.Atomic("reserved", func(context.Context, pgx.Tx, *phases.Run) error { return nil }),
				phases.Call("charged", func(ctx context.Context, run *phases.Run) error {
					p := gateway.ChargeParams{Amount: 100, Currency: "USD", Reference: run.Reference()}
					if !run.Resumed() {
						// The first execution's request goes out, and the process dies.
						send, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
						_, _ = gateway.Execute(send, run, gw, p, &gateway.ExecuteOpts{Retries: -1})
						cancel()
						return h.points.Hit(ctx, sent)
					}
					c, err := gateway.Execute(ctx, run, gw, p, nil)
					if err != nil {
						return err
					}
					return phases.Value[string]("charge").Set(run, c.ID)
				}).WithReference(func(run *phases.Run) (string, error) { return gateway.DeriveKey("payment", run.Key()), nil }),
				phases.Atomic("recorded", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
					id, err := phases.Value[string]("charge").Get(run)
					if err != nil {
						return err
					}
					return run.Respond(http.StatusCreated, map[string]string{"charge": id})
				}),
			},
		}}
	}
	h = newHarness(t, &saga.Config{Lease: time.Second}, ops)
	key := "shrunk-" + newID()
	ref := gateway.DeriveKey("payment", key)
	h.points.Crash(sent)
	first := crash.Start(func() { _, _ = h.client.Run(t.Context(), op, h.req(key, `{}`)) })
	require.True(t, first.Wait(), "the first execution dies after sending")
	require.Equal(t, 0, provider.ChargesFor(ref), "its request is still on its way")
	gw.window.Store(int64(shrunk))

	deadline := time.Now().Add(20 * time.Second)
	var res *saga.Result
	for {
		var err error
		res, err = h.client.Run(t.Context(), op, h.req(key, `{}`))
		var inProgress *saga.InProgressError
		var transient *saga.TransientError
		if err == nil || (!errors.As(err, &inProgress) && !errors.As(err, &transient)) {
			require.NoError(t, err)
			break
		}
		require.True(t, time.Now().Before(deadline), "the key did not finish: %v", err)
		time.Sleep(50 * time.Millisecond) // a client's retry pause
	}
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.Never(t, func() bool { return provider.ChargesFor(ref) > 1 }, 2*hold, 50*time.Millisecond)
	require.Equal(t, 1, provider.ChargesFor(ref), "one charge: the first execution's")
	require.Contains(t, string(res.Response.Body), provider.Ledger().Charges[0].ID)
}
