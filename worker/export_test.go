package worker

import (
	"context"

	"github.com/pgsaga/pgsaga/internal/sibling"
)

// RiverLogger is riverLogger, for the external tests.
var RiverLogger = riverLogger

// SweepLockID is the sweep's advisory lock, for the external tests.
const SweepLockID = sweepLockID

// The resumer, for the external tests.
type (
	Resumer       = resumer
	ResumerConfig = resumerConfig
	RunResult     = runResult
	Outcome       = resumeOutcome
)

// NewResumer is newResumer, for the external tests.
var NewResumer = newResumer

// The resumer's outcomes, for the external tests.
const (
	OutcomeCompleted   = outcomeCompleted
	OutcomeRescheduled = outcomeRescheduled
	OutcomeParked      = outcomeParked
	OutcomeSuperseded  = outcomeSuperseded
	OutcomeSkipped     = outcomeSkipped
)

// RunOnce is runOnce, for the external tests.
func (r *resumer) RunOnce(ctx context.Context) (*runResult, error) { return r.runOnce(ctx) }

// ResumeKeys is resumeKeys, for the external tests.
func (r *resumer) ResumeKeys(ctx context.Context, refs []sibling.KeyRef) ([]resumeOutcome, error) {
	return r.resumeKeys(ctx, refs)
}

// ResumeKey is resumeKey, for the external tests.
func (r *resumer) ResumeKey(ctx context.Context, ref sibling.KeyRef) (resumeOutcome, error) {
	return r.resumeKey(ctx, ref)
}

// The job arguments, for the external tests.
type (
	ResumeArgs      = resumeArgs
	ResumeBatchArgs = resumeBatchArgs
	OutboxArgs      = outboxArgs
)

// DeleteOldInbox is deleteOldInbox, for the external tests.
var DeleteOldInbox = deleteOldInbox

// NewStateCollectorWith is newStateCollector, for the external tests: a MaxAge and a clock.
var NewStateCollectorWith = newStateCollector
