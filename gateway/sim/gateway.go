package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// Gateway returns an in-process adapter on the simulator: the same state machine and the
// same faults as over HTTP, without the network. Fail-before is a RetryableError, a lost
// response or a context ending during latency (after the charge was created) an
// AmbiguousError, an invalid request or a reused key with other parameters a
// gateway.PermanentError.
func (s *Simulator) Gateway() gateway.Gateway {
	return inProcess{s}
}

type inProcess struct{ s *Simulator }

// Capabilities reflects the current settings; KeyRetention is 0 (keys are kept forever).
func (g inProcess) Capabilities() gateway.Capabilities {
	st := g.s.Settings()
	return gateway.Capabilities{IdempotencyKeys: st.Idempotency, Inquiry: st.Inquiry}
}

func (g inProcess) Charge(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	if err := ctx.Err(); err != nil {
		return nil, &gateway.RetryableError{Err: fmt.Errorf("charge not sent: %w", err)}
	}
	v := g.s.charge(params)
	switch {
	case v.err == errUnavailable:
		return nil, &gateway.RetryableError{Err: v.err}
	case v.err != nil:
		return nil, &gateway.PermanentError{Err: v.err}
	}
	if v.delay > 0 {
		t := time.NewTimer(v.delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, &gateway.AmbiguousError{Err: fmt.Errorf("waiting for the charge response: %w", ctx.Err())}
		case <-t.C:
		}
	}
	if v.lose {
		return nil, &gateway.AmbiguousError{Err: errResponseLost}
	}
	return v.charge, nil
}

func (g inProcess) Inquire(ctx context.Context, reference string) ([]gateway.Charge, error) {
	if err := ctx.Err(); err != nil {
		return nil, &gateway.RetryableError{Err: fmt.Errorf("inquiry not sent: %w", err)}
	}
	found, ok := g.s.inquire(reference)
	if !ok {
		return nil, fmt.Errorf("error inquiring about %q: %w", reference, gateway.ErrUnsupported)
	}
	return found, nil
}
