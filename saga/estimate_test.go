package saga_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

// TestInProgressRetryAfterEstimatesWhatIsLeft: a 409's Retry-After is the lease left until the
// client has measured the operation, then what is left of the execution in flight by what its
// earlier executions took from the same recovery point: much less than a 30s lease for an
// operation that takes milliseconds.
func TestInProgressRetryAfterEstimatesWhatIsLeft(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, _ := newClient(t, slowOperation(0, entered, release))

	inFlight := func() (*saga.InProgressError, func()) {
		key := uuid.NewString()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := c.Run(context.Background(), "slow", request(key))
			require.NoError(t, err)
		}()
		<-entered
		_, err := c.Run(t.Context(), "slow", request(key))
		var inProgress *saga.InProgressError
		require.ErrorAs(t, err, &inProgress)
		return inProgress, func() { release <- struct{}{}; <-done }
	}

	first, finish := inFlight()
	require.Equal(t, first.LeaseRemaining, first.RetryAfter, "nothing measured yet: the lease left")
	require.Greater(t, first.RetryAfter, 20*time.Second)
	finish()

	second, finish := inFlight()
	defer finish()
	require.Greater(t, second.LeaseRemaining, 20*time.Second)
	require.Less(t, second.RetryAfter, 5*time.Second, "what is left of an operation that took milliseconds")
}
