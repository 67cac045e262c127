package phases_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
)

func noop(context.Context, pgx.Tx, *phases.Run) error { return nil }

func TestCheckNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		op   phases.Operation
		want string
	}{
		{phases.Operation{}, "Operation.Name is required"},
		{phases.Operation{Name: "x"}, "Operation.Steps"},
		{phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("", noop)}}, "has no name"},
		{phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("a", nil)}}, "has no function"},
		{phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("started", noop)}}, "reserved"},
		{phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("finished", noop)}}, "reserved"},
		{phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("a", noop), phases.Atomic("a", noop)}}, "used twice"},
		{phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("a", noop)}, WaitInFlight: -time.Second}, "must not be negative"},
	} {
		err := tc.op.Check()
		require.ErrorContains(t, err, tc.want)
	}
	ok := phases.Operation{Name: "x", Steps: []phases.Step{phases.Atomic("a", noop).WithCompensation(noop)}}
	require.NoError(t, ok.Check())
}

func TestErrorsClassifyByBehaviour(t *testing.T) {
	t.Parallel()
	require.False(t, phases.IsRetryable(phases.Reject(http.StatusNotFound, "not_found", "no such thing")))
	require.False(t, phases.IsRetryable(phases.Permanent(errors.New("broken"))))
	require.True(t, phases.IsRetryable(phases.RetryAfter(time.Second, errors.New("busy"))))
	require.True(t, phases.IsRetryable(errors.New("anything else is transient")))
	var reject interface {
		Rejection() (status int, code, message string)
	}
	require.ErrorAs(t, phases.Permanent(phases.Reject(409, "taken", "taken")), &reject, "a wrapped rejection is still found")
	status, code, message := reject.Rejection()
	require.Equal(t, []any{409, "taken", "taken"}, []any{status, code, message})
	require.False(t, phases.IsOutcomeUnknown(phases.Permanent(errors.New("refused"))))
	require.True(t, phases.IsOutcomeUnknown(fmt.Errorf("wrapped: %w", phases.OutcomeUnknown(errors.New("lost")))))
	require.False(t, phases.IsRetryable(phases.OutcomeUnknown(errors.New("lost"))))
	delay, ok := phases.RetryDelay(fmt.Errorf("wrapped: %w", phases.RetryAfter(3*time.Second, errors.New("busy"))))
	require.True(t, ok)
	require.Equal(t, 3*time.Second, delay)
	_, ok = phases.RetryDelay(errors.New("no delay given"))
	require.False(t, ok)
}
