package saga

import (
	"fmt"
	"math"
	"net/textproto"
	"slices"
	"sync/atomic"
	"time"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// Client runs operations under idempotency keys, resumes them after failures, and reads keys
// for operators.
type Client struct {
	cfg *Config
	ops map[string]*phases.Operation // by name and by alias
	// opNames are the stored operation names this client runs (names and aliases), for the
	// statements that only touch keys this client can run.
	opNames  []string
	observer Observer
	// learned is what the client learned of each operation by running it.
	learned map[*phases.Operation]*learnedOp
	// calls are the recovery points of its operations that come right before a call.
	calls *resumeCalls
	// tr starts the engine's spans; nil when tracing is off.
	tr *tracer
	// storesContentType is true when Config.StoredHeaders names Content-Type.
	storesContentType bool
	// finish are how long each operation's executions took to complete from each recovery
	// point, for a 409's Retry-After.
	finish map[*phases.Operation]finishTimes
	// listener is the session duplicates listen through while they wait for an execution in
	// flight; nil when they poll.
	listener *listener
}

// learnedOp is what a client learned of an operation by running it.
type learnedOp struct {
	// windows are the in-flight windows (nanoseconds) the provider of each call step last
	// declared (phases.Run.DeclareInFlight): a call's journal row carries its step's from the
	// start, so that its declaration needs no write of its own unless the window grew.
	windows map[string]*atomic.Int64
}

// NewClient checks the config and its operations and returns a client. A client with no
// operations can still read keys (KeyGet, KeyList) and delete expired ones.
func NewClient(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, ops: map[string]*phases.Operation{}, learned: map[*phases.Operation]*learnedOp{},
		finish: map[*phases.Operation]finishTimes{},
		calls:  &resumeCalls{}, tr: newTracer(cfg.TracerProvider)}
	for _, h := range cfg.StoredHeaders {
		c.storesContentType = c.storesContentType || textproto.CanonicalMIMEHeaderKey(h) == "Content-Type"
	}
	for _, op := range cfg.Operations {
		names := append([]string{op.Name}, op.Aliases...)
		for _, name := range names {
			if _, dup := c.ops[name]; dup {
				return nil, fmt.Errorf("saga: Config.Operations names %q twice (as a name or an alias)", name)
			}
			c.ops[name] = op
			c.opNames = append(c.opNames, name)
		}
		l := &learnedOp{windows: map[string]*atomic.Int64{}}
		for _, step := range op.Steps {
			if st := runstate.Step(step); st.Call() != nil {
				l.windows[st.Name()] = &atomic.Int64{}
			}
		}
		c.learned[op] = l
		c.finish[op] = newFinishTimes(op)
		c.calls.add(op, names, c.maxAttempts(op), c.maxAge(op))
	}
	if db := c.listenDB(); db != nil {
		c.listener = newListener(db, cfg.Logger)
	}
	c.observer = cfg.Observer
	if c.observer == nil {
		c.observer = nopObserver{}
	}
	return c, nil
}

// add maps op's recovery points that come right before a call (under every stored name of the
// operation and of the phase) to that call.
func (m *resumeCalls) add(op *phases.Operation, names []string, maxAttempts int, maxAge time.Duration) {
	for i, step := range op.Steps {
		if runstate.Step(step).Call() == nil {
			continue
		}
		var points []string
		switch prev := runstate.Step(op.Steps[max(i-1, 0)]); {
		case i == 0:
			points = []string{phases.RecoveryPointStarted}
		case prev.Atomic() != nil:
			points = append([]string{prev.Name()}, prev.Aliases()...)
		}
		for _, name := range names {
			for _, point := range points {
				m.operations = append(m.operations, name)
				m.recoveryPoints = append(m.recoveryPoints, point)
				m.steps = append(m.steps, step.Name())
				m.maxAttempts = append(m.maxAttempts, int32(min(maxAttempts, math.MaxInt32)))
				m.maxAgeMs = append(m.maxAgeMs, maxAge.Milliseconds())
			}
		}
	}
}

// learnWindow records the in-flight window op's call step declared.
func (c *Client) learnWindow(op *phases.Operation, step string, window time.Duration) {
	if l := c.learned[op]; l != nil {
		if w := l.windows[step]; w != nil && w.Load() != int64(window) {
			w.Store(int64(window))
		}
	}
}

// callWindow is the in-flight window op's call step last declared (0 before any).
func (c *Client) callWindow(op *phases.Operation, step string) time.Duration {
	if l := c.learned[op]; l != nil && l.windows[step] != nil {
		return time.Duration(l.windows[step].Load())
	}
	return 0
}

// Config returns the client's configuration with defaults applied.
func (c *Client) Config() *Config { return c.cfg }

// Operation returns a registered operation by name (or alias).
func (c *Client) Operation(name string) (*phases.Operation, bool) {
	op, ok := c.ops[name]
	return op, ok
}

// OperationNames are the operation names this client runs, with their aliases, in Config order.
func (c *Client) OperationNames() []string { return slices.Clone(c.opNames) }

func (c *Client) operation(name string) (*phases.Operation, error) {
	op, ok := c.ops[name]
	if !ok {
		return nil, &RefusedError{Reason: RefusedUnknownOperation, detail: fmt.Sprintf("%q", name)}
	}
	return op, nil
}

func (c *Client) maxAttempts(op *phases.Operation) int {
	if op.MaxAttempts > 0 {
		return op.MaxAttempts
	}
	return c.cfg.MaxAttempts
}

func (c *Client) maxAge(op *phases.Operation) time.Duration {
	if op.MaxAge > 0 {
		return op.MaxAge
	}
	return c.cfg.MaxAge
}

func (c *Client) retention(op *phases.Operation) time.Duration {
	if op.Retention > 0 {
		return op.Retention
	}
	return c.cfg.Retention
}
