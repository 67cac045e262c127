package crash

import "sync/atomic"

// Goroutine is a function running on its own goroutine, as one request runs in a process that
// may die (Die) on the way.
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

// Done is closed when fn returned or its goroutine died.
func (g *Goroutine) Done() <-chan struct{} { return g.done }

// Wait waits for fn and reports whether its goroutine died instead of returning. A goroutine
// that ended any other way without returning (a test's FailNow) counts as dead too.
func (g *Goroutine) Wait() (died bool) {
	<-g.done
	return !g.returned.Load()
}

// Run runs fn on its own goroutine, waits, and reports whether it died.
func Run(fn func()) (died bool) { return Start(fn).Wait() }
