// Package sleep pauses a goroutine for a duration unless its context ends first.
package sleep

import (
	"context"
	"time"
)

// For waits d, or until ctx ends (false). It returns true at once when d <= 0.
func For(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
