// Package smssim is a simulated SMS provider for tests and examples: a gateway.Effect of text
// messages (gateway/sms) with the faults of gateway/effectsim, without idempotency keys and with
// inquiry, as most SMS providers are.
package smssim

import (
	"errors"
	"slices"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/effectsim"
	"github.com/pgsaga/pgsaga/gateway/sms"
)

// Config sets up a simulated SMS provider. The zero value (or nil) is a provider without
// idempotency keys that can be asked by reference what it sent, and injects no faults.
type Config struct {
	// Idempotency, when true, makes the provider de-duplicate by idempotency key. A pointer so
	// that nil means the default. Defaults to false: like most SMS providers, it has no keys.
	Idempotency *bool
	// Inquiry, when true, lets the provider be asked by reference what it sent. A pointer so
	// that nil means the default. Defaults to true.
	Inquiry *bool
	// OptedOut are numbers whose messages the provider declines. Defaults to none.
	OptedOut []string
	// RequestTimeout is the per-request timeout the provider declares. Defaults to 5s.
	RequestTimeout time.Duration
	// PendingFor is how long a message PendingNext picked stays queued. Defaults to 2s.
	PendingFor time.Duration
	// Faults are the faults and delays injected from the start. Each defaults to 0: none.
	effectsim.Faults
	// Seed seeds the random source behind the fault probabilities. Defaults to 0.
	Seed uint64
}

// New returns an in-process SMS provider configured by cfg: a gateway.Effect of messages with
// the faults of effectsim (lost answers, fail-before, latency before a message lands). Its
// message ids begin with "msg_". It panics when cfg is out of range.
func New(cfg *Config) *effectsim.Simulator[sms.Params, sms.Message] {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	off := false
	if c.Idempotency == nil {
		c.Idempotency = &off
	}
	return effectsim.New(&effectsim.Config[sms.Params, sms.Message]{
		Kind: sms.Kind,
		Make: func(p sms.Params, id string, status gateway.Status, at time.Time) sms.Message {
			return sms.Message{ID: id, To: p.To, Text: p.Text, Reference: p.Reference, Status: status, SentAt: at.Round(0).UTC()}
		},
		Validate:       validate,
		Declines:       func(p sms.Params) bool { return slices.Contains(c.OptedOut, p.To) },
		IDPrefix:       "msg_",
		Idempotency:    c.Idempotency,
		Inquiry:        c.Inquiry,
		RequestTimeout: c.RequestTimeout,
		PendingFor:     c.PendingFor,
		Faults:         c.Faults,
		Seed:           c.Seed,
	})
}

// maxText is the longest message the simulated provider takes: ten concatenated segments.
const maxText = 1600

// validate refuses what an SMS provider refuses without sending: no reference, no text or too
// much of it, a number that is not E.164.
func validate(p sms.Params) error {
	switch {
	case p.Reference == "":
		return errors.New("reference is required")
	case p.Text == "":
		return errors.New("text is required")
	case len(p.Text) > maxText:
		return errors.New("text is longer than 1600 characters")
	case !sms.ValidNumber(p.To):
		return errors.New("to must be a number in E.164 form, such as +14155550100")
	}
	return nil
}
