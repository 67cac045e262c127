package gatewaytest

import (
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
	mu      sync.Mutex
	calls   []phases.CallRecord
	quietAt time.Time
	// started is when the attempt under way read its prior calls (its journal row's start).
	started time.Time
}

var _ gateway.Journal = (*Journal)(nil)

// Add appends an earlier attempt as an execution left it: a crashed one has no Outcome and no
// EndedAt (it may have reached the provider).
func (j *Journal) Add(c phases.CallRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	c.Attempt = len(j.calls) + 1
	j.calls = append(j.calls, c)
}

// SetQuietAt sets what QuietAt returns: when the earlier attempts stopped sending.
func (j *Journal) SetQuietAt(t time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.quietAt = t
}

// PriorCalls returns the calls recorded so far, oldest first, and marks the start of an attempt.
func (j *Journal) PriorCalls() []phases.CallRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.started = time.Now()
	return append([]phases.CallRecord(nil), j.calls...)
}

// QuietAt returns the time set by SetQuietAt (zero by default).
func (j *Journal) QuietAt() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.quietAt
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
	j.started = time.Time{}
	j.calls = append(j.calls, phases.CallRecord{
		Attempt: len(j.calls) + 1, StartedAt: started, EndedAt: &now, Outcome: outcome, ProviderID: providerID,
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
