package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/internal/sleep"
	"github.com/pgsaga/pgsaga/phases"
)

// Gateway returns an in-process adapter on the simulator: the same state machine and the
// same faults as over HTTP, without the network. Fail-before and a context ended before the
// call are gateway.NotDone; a lost response, or a context ending while the request is
// held (latency-before: it still lands later) or waits for its answer, gateway.Unknown;
// a reused key with other parameters (the first request under it may have charged) a
// gateway.Unknown; an invalid request phases.Permanent.
func (s *Simulator) Gateway() gateway.Gateway {
	return inProcess{s}
}

type inProcess struct{ s *Simulator }

// Capabilities reflects the current settings (see Simulator.Capabilities); KeyRetention is 0
// (keys are kept forever).
func (g inProcess) Capabilities() gateway.Capabilities {
	return g.s.Capabilities()
}

func (inProcess) Kind() *gateway.Kind[gateway.ChargeParams, gateway.Charge] { return gateway.Charges }

func (g inProcess) Send(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("charge not sent: %w", err))
	}
	v := g.s.charge(params)
	// The request is on its way: it takes effect at landAt whether or not we still wait.
	if !sleep.For(ctx, time.Until(v.landAt)) {
		return nil, gateway.Unknown(fmt.Errorf("gave up while the charge was on its way: %w", ctx.Err()))
	}
	switch {
	case v.err == errUnavailable:
		return nil, gateway.NotDone(v.err)
	case v.err == errKeyReused:
		return nil, gateway.Unknown(v.err)
	case v.err != nil:
		return nil, phases.Permanent(v.err)
	}
	if v.Hang {
		<-ctx.Done()
		return nil, gateway.Unknown(fmt.Errorf("no answer to the charge: %w", ctx.Err()))
	}
	if !sleep.For(ctx, v.Delay) {
		return nil, gateway.Unknown(fmt.Errorf("waiting for the charge response: %w", ctx.Err()))
	}
	if v.Lose {
		return nil, gateway.Unknown(errResponseLost)
	}
	return v.charge, nil
}

func (g inProcess) Inquire(ctx context.Context, reference string) ([]gateway.Charge, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("inquiry not sent: %w", err))
	}
	found, ok := g.s.inquire(reference)
	if !ok {
		return nil, fmt.Errorf("error inquiring about %q: %w", reference, gateway.ErrUnsupported)
	}
	return found, nil
}

func (g inProcess) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("read not sent: %w", err))
	}
	charge, ok := g.s.Get(id)
	if !ok {
		return nil, fmt.Errorf("error reading charge %q: %w", id, gateway.ErrNotFound)
	}
	return &charge, nil
}
