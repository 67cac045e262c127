package saga

import (
	"context"
	"reflect"
	"sync"
	"time"
)

// phaseContext is the context of an execution's atomic phases and compensations: the
// execution's context, done once the phase under way outlives its bound, the lease. One serves
// the execution's phases one after the other, its deadline moved for each on one timer. (A
// context.WithTimeout per phase cost a context, a timer, a done channel and pgx's registration
// in a new map for each: a third of what a phased request allocated.)
//
// It behaves as a context.WithTimeout of the phase would: Deadline is the phase's, and once
// done Err and context.Cause are context.DeadlineExceeded. Underneath is one cancelable context
// for the execution, so pgx's and context.AfterFunc's registrations on it are those of any
// context.WithCancel.
type phaseContext struct {
	context.Context // context.WithCancelCause of the execution's context
	cancel          context.CancelCauseFunc
	parent          context.Context
	timer           *time.Timer

	mu       sync.Mutex
	deadline time.Time
}

// bound is the context of a phase that starts now under parent (unbound ends it, when the phase
// ends): the execution's phaseContext, its deadline moved, or a new one when the last phase
// outlived its bound (or ran under another parent). A parent that can be cancelled gets a
// context.WithTimeout of its own.
func (e *execution) bound(parent context.Context) context.Context {
	d := e.c.cfg.Lease
	if parent.Done() != nil {
		ctx, cancel := context.WithTimeout(parent, d)
		e.phaseCancel = cancel
		return ctx
	}
	c := e.phaseCtx
	if c == nil || !sameContext(c.parent, parent) {
		c = &phaseContext{parent: parent, deadline: time.Now().Add(d)}
		c.Context, c.cancel = context.WithCancelCause(parent)
		c.timer = time.AfterFunc(d, c.expire)
		e.phaseCtx = c
	} else {
		c.mu.Lock()
		c.deadline = time.Now().Add(d)
		c.mu.Unlock()
		c.timer.Reset(d)
	}
	return c
}

// unbound ends the bound of the phase that ended. A bound that passed (or is passing) leaves its
// context done: the next phase gets a new one.
func (e *execution) unbound() {
	if cancel := e.phaseCancel; cancel != nil {
		e.phaseCancel = nil
		cancel()
		return
	}
	if !e.phaseCtx.timer.Stop() {
		e.phaseCtx = nil
	}
}

// sameContext reports whether a and b are the same context (false, rather than a panic, when
// their type cannot be compared).
func sameContext(a, b context.Context) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// expire ends the context: the phase outlived its bound.
func (c *phaseContext) expire() { c.cancel(context.DeadlineExceeded) }

func (c *phaseContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadline, true
}

// Err is context.DeadlineExceeded once the bound passed, as a context.WithTimeout's would be.
func (c *phaseContext) Err() error {
	if c.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *phaseContext) String() string { return "saga.phaseContext" }
