package saga

import (
	"fmt"
	"slices"
	"time"

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
}

// NewClient checks the config and its operations and returns a client. A client with no
// operations can still read keys (KeyGet, KeyList) and delete expired ones.
func NewClient(cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, ops: map[string]*phases.Operation{}}
	for _, op := range cfg.Operations {
		for _, name := range append([]string{op.Name}, op.Aliases...) {
			if _, dup := c.ops[name]; dup {
				return nil, fmt.Errorf("saga: Config.Operations names %q twice (as a name or an alias)", name)
			}
			c.ops[name] = op
			c.opNames = append(c.opNames, name)
		}
	}
	c.observer = cfg.Observer
	if c.observer == nil && cfg.Registerer != nil {
		o, err := NewPrometheusObserver(cfg.Registerer)
		if err != nil {
			return nil, err
		}
		c.observer = o
	}
	if c.observer == nil {
		c.observer = nopObserver{}
	}
	return c, nil
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
		return nil, fmt.Errorf("%w: %q", ErrUnknownOperation, name)
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
