package chaos

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/testkit/crash"
)

// Points is a set of named places in code under test where a test makes an execution crash,
// stall or fail. Code under test calls Hit at each place; a test arms a place with Crash, Block
// or Fail. Each arming is used by one hit, in the order armed; a place that is not armed does
// nothing. Points is safe for concurrent use; the zero value is not usable, use NewPoints.
type Points struct {
	mu    sync.Mutex
	armed map[string][]action
	hits  map[string]int
	gates []*Gate
}

type action struct {
	crash bool
	gate  *Gate
	// frozen gates wait whatever the context says, as a stopped process (SIGSTOP) would.
	frozen bool
	err    error
}

// NewPoints returns a set with nothing armed.
func NewPoints() *Points {
	return &Points{armed: map[string][]action{}, hits: map[string]int{}}
}

// Crash makes the next hit of name kill the execution there, as a killed process dies
// (crash.Die): the connection of the atomic phase it is in is lost, nothing rolls back, and its
// goroutine ends. A point in a call or a gateway holds no connection.
func (p *Points) Crash(name string) { p.arm(name, action{crash: true}) }

// Fail makes the next hit of name return err to the code under test.
func (p *Points) Fail(name string, err error) { p.arm(name, action{err: err}) }

// Block makes the next hit of name wait until the returned gate is released (or the hit's
// context ends). Gate.Reached is closed when an execution arrives there.
func (p *Points) Block(name string) *Gate {
	g := p.newGate()
	p.arm(name, action{gate: g})
	return g
}

// Freeze is Block for a stopped process: the execution waits for the gate's release even when
// its context ends meanwhile, and then goes on with whatever deadline has passed.
func (p *Points) Freeze(name string) *Gate {
	g := p.newGate()
	p.arm(name, action{gate: g, frozen: true})
	return g
}

func (p *Points) arm(name string, a action) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed[name] = append(p.armed[name], a)
}

// Hit is called by code under test at the place called name. It counts the hit, then carries
// out the first arming of name if there is one: it never returns for Crash, waits for Block, and
// returns Fail's error (or the error a gate was released with). A crash at Hit loses no
// connection: Hit is for places outside transactions, and the atomic phases WrapOperation
// wraps lose theirs.
func (p *Points) Hit(ctx context.Context, name string) error { return p.hit(ctx, name, nil) }

// hit is Hit by an execution holding the connection held (nil when it holds none).
func (p *Points) hit(ctx context.Context, name string, held *pgx.Conn) error {
	p.mu.Lock()
	p.hits[name]++
	var a action
	queue := p.armed[name]
	if len(queue) > 0 {
		a, p.armed[name] = queue[0], queue[1:]
	}
	p.mu.Unlock()

	switch {
	case a.crash:
		crash.Die(held)
	case a.gate != nil && a.frozen:
		close(a.gate.reached)
		<-a.gate.release
		return a.gate.err
	case a.gate != nil:
		close(a.gate.reached)
		select {
		case <-a.gate.release:
			return a.gate.err
		case <-ctx.Done():
			return fmt.Errorf("chaos: blocked at %q until the context ended: %w", name, ctx.Err())
		}
	}
	return a.err
}

// Hits counts how many times name was reached, armed or not.
func (p *Points) Hits(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[name]
}

// Pending reports the armings not used yet, by name, so a test can check that every point it
// armed was reached.
func (p *Points) Pending() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for name, q := range p.armed {
		if len(q) > 0 {
			out[name] = len(q)
		}
	}
	return out
}

// Gate holds an execution blocked at a point until the test lets it go.
type Gate struct {
	reached chan struct{}
	release chan struct{}
	once    sync.Once
	err     error
}

func (p *Points) newGate() *Gate {
	g := &Gate{reached: make(chan struct{}), release: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gates = append(p.gates, g)
	return g
}

// ReleaseAll releases every gate ever armed, so that a test that stops half-way leaves no
// execution blocked (holding a connection, or an HTTP request its server waits for). Register
// it with t.Cleanup after the servers the blocked executions run in.
func (p *Points) ReleaseAll() {
	p.mu.Lock()
	gates := append([]*Gate(nil), p.gates...)
	p.mu.Unlock()
	for _, g := range gates {
		g.Release()
	}
}

// Reached is closed when an execution arrives at the gate.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// Release lets the blocked execution continue as if nothing happened.
func (g *Gate) Release() { g.ReleaseWith(nil) }

// ReleaseWith lets the blocked execution continue with err returned from its hit (for example
// a gateway error standing for an answer that never came). Only the first release counts.
func (g *Gate) ReleaseWith(err error) {
	g.once.Do(func() {
		g.err = err
		close(g.release)
	})
}
