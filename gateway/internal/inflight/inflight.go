// Package inflight keeps a simulated provider's in-flight window: how long a request already
// sent may still take to land. A provider that holds requests before acting declares its
// longest hold as gateway.Capabilities.MaxInFlight. When the hold is shortened at run time, a
// request held under the earlier, longer setting is still on its way, and the declared window
// must cover it until it lands: the engine trusts an empty inquiry only after that window.
package inflight

import (
	"slices"
	"time"
)

// Window is the requests still on their way to the provider, each with its hold. The zero
// value is empty. It is not safe for concurrent use: its simulator's lock guards it.
type Window struct {
	held []held
}

type held struct {
	hold   time.Duration
	landAt time.Time
}

// Add records a request that arrived at arrivedAt and lands at landAt. A request that lands
// as it arrives is never on its way and is not kept.
func (w *Window) Add(arrivedAt, landAt time.Time) {
	if !landAt.After(arrivedAt) {
		return
	}
	w.drop(arrivedAt)
	w.held = append(w.held, held{hold: landAt.Sub(arrivedAt), landAt: landAt})
}

// MaxInFlight returns declared, or the longer hold of a request that has not landed at now.
func (w *Window) MaxInFlight(now time.Time, declared time.Duration) time.Duration {
	w.drop(now)
	for _, h := range w.held {
		declared = max(declared, h.hold)
	}
	return declared
}

// drop forgets the requests that have landed at now.
func (w *Window) drop(now time.Time) {
	w.held = slices.DeleteFunc(w.held, func(h held) bool { return !now.Before(h.landAt) })
}
