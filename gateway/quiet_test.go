package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
)

func TestEmptyInquiryConclusiveAt(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	ended := func(end time.Duration, window time.Duration, outcome phases.CallOutcome) phases.CallRecord {
		return phases.CallRecord{StartedAt: t0, EndedAt: at(end), Deadline: t0.Add(time.Hour), MaxInFlight: window, Outcome: outcome}
	}
	dead := func(deadline, window time.Duration) phases.CallRecord {
		return phases.CallRecord{StartedAt: t0, Deadline: t0.Add(deadline), MaxInFlight: window}
	}
	for name, tc := range map[string]struct {
		attempts []phases.CallRecord
		window   time.Duration
		want     time.Time
	}{
		"no attempt":                 {nil, time.Second, time.Time{}},
		"certainly not done":         {[]phases.CallRecord{ended(time.Second, time.Second, phases.CallOutcomeFailedBefore)}, time.Second, time.Time{}},
		"ended, window now longer":   {[]phases.CallRecord{ended(time.Second, 0, phases.CallOutcomeUnknown)}, 2 * time.Second, t0.Add(3 * time.Second)},
		"ended, window shrank":       {[]phases.CallRecord{ended(time.Second, 5*time.Second, phases.CallOutcomeUnknown)}, 100 * time.Millisecond, t0.Add(6 * time.Second)},
		"dead: its lease end":        {[]phases.CallRecord{dead(30*time.Second, 0)}, time.Second, t0.Add(31 * time.Second)},
		"dead, window shrank":        {[]phases.CallRecord{dead(30*time.Second, 4*time.Second)}, time.Second, t0.Add(34 * time.Second)},
		"pending may have reached":   {[]phases.CallRecord{ended(time.Second, 0, phases.CallOutcomePending)}, time.Second, t0.Add(2 * time.Second)},
		"the latest of several":      {[]phases.CallRecord{dead(10*time.Second, 0), ended(3*time.Second, 9*time.Second, phases.CallOutcomeUnknown), ended(time.Hour, 0, phases.CallOutcomeFailedBefore)}, time.Second, t0.Add(12 * time.Second)},
		"zero window, ended attempt": {[]phases.CallRecord{ended(time.Second, 0, phases.CallOutcomeUnknown)}, 0, t0.Add(time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, emptyInquiryConclusiveAt(tc.attempts, tc.window))
		})
	}
}
