package chaos

import (
	"context"

	"github.com/pgsaga/pgsaga/gateway"
)

// Point names inside a wrapped gateway, for Points.Crash, Block and Fail.
const (
	// ChargeBefore is reached before a charge is sent: crashing here dies with nothing charged.
	ChargeBefore = "gateway/charge/before"
	// ChargeAfter is reached after the provider answered a charge (or failed to): crashing here
	// dies after the charge reached the provider and before anyone recorded it. An error a
	// point returns here replaces the provider's answer, as a lost response would.
	ChargeAfter = "gateway/charge/after"
	// InquireBefore is reached before an inquiry is sent.
	InquireBefore = "gateway/inquire/before"
	// GetBefore is reached before a charge is read back by id.
	GetBefore = "gateway/get/before"
)

// WrapGateway returns gw with points on its calls (ChargeBefore, ChargeAfter, InquireBefore,
// GetBefore).
// It behaves as gw while nothing is armed.
func WrapGateway(gw gateway.Gateway, points *Points) gateway.Gateway {
	return &wrappedGateway{gw: gw, points: points}
}

type wrappedGateway struct {
	gw     gateway.Gateway
	points *Points
}

func (g *wrappedGateway) Kind() *gateway.Kind[gateway.ChargeParams, gateway.Charge] {
	return gateway.Charges
}

func (g *wrappedGateway) Capabilities() gateway.Capabilities { return g.gw.Capabilities() }

func (g *wrappedGateway) Send(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	if err := g.points.Hit(ctx, ChargeBefore); err != nil {
		return nil, err
	}
	charge, err := g.gw.Send(ctx, params)
	// The answer is in hand whatever ctx says now: a gate released late still returns it.
	if perr := g.points.Hit(context.WithoutCancel(ctx), ChargeAfter); perr != nil {
		return nil, perr
	}
	return charge, err
}

func (g *wrappedGateway) Inquire(ctx context.Context, reference string) ([]gateway.Charge, error) {
	if err := g.points.Hit(ctx, InquireBefore); err != nil {
		return nil, err
	}
	return g.gw.Inquire(ctx, reference)
}

func (g *wrappedGateway) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	if err := g.points.Hit(ctx, GetBefore); err != nil {
		return nil, err
	}
	return g.gw.Get(ctx, id)
}
