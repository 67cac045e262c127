package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/resumetest"
	"github.com/pgsaga/pgsaga/worker"
)

// The crashed-key operation and its seeding are shared with the resumer's tests.
const opEffect = resumetest.OpEffect

var (
	scope             = resumetest.Scope
	newEffects        = resumetest.NewEffects
	createEffectTable = resumetest.CreateEffectTable
	seedCrashed       = resumetest.SeedCrashed
	newClient         = resumetest.NewClient
	countRows         = resumetest.CountRows
)

// startWorker builds and starts a worker with a fast sweep, and stops it when the test ends.
func startWorker(t testing.TB, cfg *worker.Config) *worker.Worker {
	t.Helper()
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = 50 * time.Millisecond
	}
	w, err := worker.New(cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.WithoutCancel(t.Context())))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
