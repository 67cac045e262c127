package saga

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// Request is one attempt to run an operation under an idempotency key.
type Request struct {
	// Scope owns the key; take it from authentication, never from the body.
	Scope Scope
	// Key is the client's idempotency key (see ValidateKey).
	Key string
	// Method and Path are those of the HTTP request (or any stable names for non-HTTP use). A key
	// reused with another method or path is rejected with ErrKeyReused.
	Method string
	Path   string
	// Body is the raw JSON request body. It is stored as sent, and fingerprinted canonically.
	Body []byte

	// Operation is filled in by the client.
	Operation string
}

// Client runs operations under idempotency keys and resumes them after failures.
type Client struct {
	cfg     *Config
	ops     map[string]*phases.Operation
	opNames []string // the keys of ops, for statements that only touch keys this client runs
	metrics *metrics
}

// NewClient checks the config and its operations and returns a client.
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
		c.ops[op.Name] = op
		c.opNames = append(c.opNames, op.Name)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	return c, nil
}

// Config returns the client's configuration with defaults applied.
func (c *Client) Config() *Config { return c.cfg }

// Operation returns a registered operation by name.
func (c *Client) Operation(name string) (*phases.Operation, bool) {
	op, ok := c.ops[name]
	return op, ok
}

// OperationNames are the names of the operations this client runs, in Config order.
func (c *Client) OperationNames() []string { return slices.Clone(c.opNames) }

// TakeOver takes the lease of a started key whose lease expired, with a new fencing token, if
// its operation is one this client runs, and returns it for ResumeClaimed. It returns nil and no
// error when the key cannot be taken (its lease is live, it finished or was parked, its
// operation is not this client's) and ErrKeyNotFound when there is no such key. It is the
// one-key form of a resumer's batch claim.
func (c *Client) TakeOver(ctx context.Context, scope Scope, key string) (*Key, error) {
	k, err := takeOverKey(ctx, c.cfg.DB, scope, key, c.cfg.Lease, false, c.opNames)
	if errors.Is(err, ErrInProgress) {
		return nil, nil
	}
	return k, err
}

func (c *Client) operation(name string) (*phases.Operation, error) {
	op, ok := c.ops[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownOperation, name)
	}
	return op, nil
}

// Key reads one key.
func (c *Client) Key(ctx context.Context, scope Scope, key string) (*Key, error) {
	return lookupKey(ctx, c.cfg.DB, scope, key)
}

func (c *Client) maxAttempts(op *phases.Operation) int {
	if op.MaxAttempts > 0 {
		return op.MaxAttempts
	}
	return c.cfg.MaxAttempts
}

func (c *Client) retention(op *phases.Operation) time.Duration {
	if op.Retention > 0 {
		return op.Retention
	}
	return c.cfg.Retention
}
