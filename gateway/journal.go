package gateway

import (
	"context"
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// Journal is the engine's record of a call's attempts; *phases.Run implements it for a call step.
type Journal interface {
	// PriorCalls returns the earlier attempts of this call, oldest first, on this process's
	// clock.
	PriorCalls() []phases.CallRecord
	// DeclareInFlight journals, before a request is sent, the provider's in-flight window in
	// force (Capabilities.MaxInFlight); when it returns an error, nothing may be sent.
	DeclareInFlight(ctx context.Context, window time.Duration) error
	// RecordCall records what this attempt came to, and the provider's id for its effect when
	// it knows one.
	RecordCall(outcome phases.CallOutcome, providerID string)
}
