package recovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/resumetest"
	"github.com/pgsaga/pgsaga/recovery"
	"github.com/pgsaga/pgsaga/saga"
)

// The crashed-key operation and its seeding are shared with the worker's tests.
const opEffect = resumetest.OpEffect

var (
	scope             = resumetest.Scope
	newEffects        = resumetest.NewEffects
	createEffectTable = resumetest.CreateEffectTable
	seedCrashed       = resumetest.SeedCrashed
	newClient         = resumetest.NewClient
	countRows         = resumetest.CountRows
)

func keyRow(t testing.TB, c *saga.Client, key string) *saga.Key {
	t.Helper()
	k, err := c.KeyGet(t.Context(), scope, key)
	require.NoError(t, err)
	return k
}

// drain runs RunOnce until a pass claims nothing, and adds up the results.
func drain(ctx context.Context, r *recovery.Resumer) (*recovery.RunResult, error) {
	total := &recovery.RunResult{}
	for {
		res, err := r.RunOnce(ctx)
		if err != nil {
			return total, err
		}
		total.Claimed += res.Claimed
		total.Completed += res.Completed
		total.Rescheduled += res.Rescheduled
		total.Parked += res.Parked
		total.Superseded += res.Superseded
		if res.Claimed == 0 {
			return total, nil
		}
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var errFlaky = errors.New("downstream unavailable")
