package gatewaytest

import (
	"context"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
)

// Journal is an in-memory gateway.Journal for tests: it plays the engine's call journal for one
// call step across attempts. Every Execute given it is one attempt: it sees the calls recorded
// so far (and those added with Add) as its prior calls, and what it records becomes a prior call
// of the next one. The zero value is an empty journal; it is safe for concurrent use.
type Journal struct {
	mu    sync.Mutex
	calls []phases.CallRecord
	// started is when the attempt under way read its prior calls (its journal row's start).
	started time.Time
	// window is the longest in-flight window the attempt under way declared.
	window time.Duration
	// declareErr, when set, is what DeclareInFlight returns (FailDeclare).
	declareErr error
}

var _ gateway.Journal = (*Journal)(nil)

// Add appends an earlier attempt as an execution left it: a crashed one has no Outcome and no
// EndedAt (it may have reached the provider), and its Deadline is when its lease ended.
func (j *Journal) Add(c phases.CallRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	c.Attempt = len(j.calls) + 1
	j.calls = append(j.calls, c)
}

// FailDeclare makes every DeclareInFlight from now on return err (nil: succeed again), as the
// engine's does when it cannot journal the window (the lease was lost, the database is down).
func (j *Journal) FailDeclare(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.declareErr = err
}

// PriorCalls returns the calls recorded so far, oldest first, and marks the start of an attempt.
func (j *Journal) PriorCalls() []phases.CallRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.started = time.Now()
	return append([]phases.CallRecord(nil), j.calls...)
}

// DeclareInFlight notes the in-flight window the attempt under way sends under: the longest
// one declared becomes its record's MaxInFlight.
func (j *Journal) DeclareInFlight(_ context.Context, window time.Duration) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.declareErr != nil {
		return j.declareErr
	}
	j.window = max(j.window, window)
	return nil
}

// RecordCall appends the attempt's record, ended now.
func (j *Journal) RecordCall(outcome phases.CallOutcome, providerID string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := time.Now()
	started := j.started
	if started.IsZero() {
		started = now
	}
	window := j.window
	j.started, j.window = time.Time{}, 0
	j.calls = append(j.calls, phases.CallRecord{
		Attempt: len(j.calls) + 1, StartedAt: started, EndedAt: &now, MaxInFlight: window, Outcome: outcome,
		ProviderID: providerID,
	})
}

// Calls returns every call, added or recorded, oldest first.
func (j *Journal) Calls() []phases.CallRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]phases.CallRecord(nil), j.calls...)
}

// Outcomes returns the outcome of every call, oldest first.
func (j *Journal) Outcomes() []phases.CallOutcome {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]phases.CallOutcome, len(j.calls))
	for i, c := range j.calls {
		out[i] = c.Outcome
	}
	return out
}
