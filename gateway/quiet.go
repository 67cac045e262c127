package gateway

import (
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// emptyInquiryConclusiveAt is the one rule that decides whether a second effect (a second
// charge, message or delivery) is possible: the moment from which an inquiry that finds nothing
// proves that none of attempts acted. A request an attempt sent may still land until the
// attempt has been quiet (CallRecord.QuietAt) for the provider's in-flight window; the window
// that counts is the longer of the one the attempt sent under (journaled before it sent) and the
// one declared now, so a provider whose window shrank since, or a process configured with a
// shorter one, still waits long enough. Attempts recorded as certainly not done are skipped.
// Zero when no attempt may have reached the provider. Every time is on this process's clock.
func emptyInquiryConclusiveAt(attempts []phases.CallRecord, window time.Duration) time.Time {
	var at time.Time
	for _, c := range attempts {
		if !c.MayHaveReached() {
			continue
		}
		if t := c.QuietAt().Add(max(c.MaxInFlight, window)); t.After(at) {
			at = t
		}
	}
	return at
}
