package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

func keyRow(t testing.TB, c *saga.Client, key string) *saga.Key {
	t.Helper()
	k, err := c.KeyGet(t.Context(), scope, key)
	require.NoError(t, err)
	return k
}

// drain runs RunOnce until a pass claims nothing, and adds up the results.
func drain(ctx context.Context, r *worker.Resumer) (*worker.RunResult, error) {
	total := &worker.RunResult{}
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

var errFlaky = errors.New("downstream unavailable")
