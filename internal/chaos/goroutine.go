package chaos

import "sync/atomic"

// Goroutine is a function running on its own goroutine, as one request would run in a process
// that may die at a crash point.
type Goroutine struct {
	done     chan struct{}
	returned atomic.Bool
}

// Start runs fn on a new goroutine.
func Start(fn func()) *Goroutine {
	g := &Goroutine{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		fn()
		g.returned.Store(true)
	}()
	return g
}

// Done is closed when fn returned or its goroutine ended at a crash point.
func (g *Goroutine) Done() <-chan struct{} { return g.done }

// Wait waits for fn and reports whether it crashed (ended at a crash point) instead of
// returning.
func (g *Goroutine) Wait() (crashed bool) {
	<-g.done
	return !g.returned.Load()
}

// Run runs fn on its own goroutine, waits, and reports whether it crashed.
func Run(fn func()) (crashed bool) { return Start(fn).Wait() }
