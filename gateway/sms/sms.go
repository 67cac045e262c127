package sms

import (
	"context"
	"fmt"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// Params is one text message to send.
type Params struct {
	// To is the recipient's number in E.164 form, such as "+14155550100".
	To string
	// Text is the message.
	Text string
	// Reference identifies the message on our side, derived from the intent
	// (phases.Run.Reference, or gateway.DeriveKey over an intent-derived id): the provider
	// stores it with the message, and inquiry finds the message by it.
	Reference string
	// IdempotencyKey is the derived downstream key, for a provider that de-duplicates by one;
	// a provider without keys ignores it.
	IdempotencyKey string
}

// Message is a message as the provider knows it.
type Message struct {
	// ID is the provider's identifier for the message.
	ID string `json:"id"`
	// To is the recipient's number.
	To string `json:"to"`
	// Text is the message.
	Text string `json:"text"`
	// Reference is Params.Reference as the provider recorded it.
	Reference string `json:"reference"`
	// Status is the provider's verdict: succeeded once it accepted the message for delivery,
	// declined when it refused it (a number that cannot receive texts, or that opted out),
	// pending while it is queued and not yet accepted.
	Status gateway.Status `json:"status"`
	// SentAt is when the provider took the message, on its clock; zero when the adapter does
	// not know it.
	SentAt time.Time `json:"sent_at,omitzero"`
}

// Kind is the kind of an SMS provider's effects: a message is found by its reference, sent with
// its idempotency key when the provider has keys, and the intent's only when its recipient,
// text and reference are.
var Kind = &gateway.Kind[Params, Message]{
	Name: "message",
	Keys: func(p Params) (string, string) { return p.Reference, p.IdempotencyKey },
	Verdict: func(m *Message) (string, gateway.Status) {
		return m.ID, m.Status
	},
	Match: func(p Params, m *Message) error {
		switch {
		case m.Reference != p.Reference:
			return fmt.Errorf("it has reference %q, the intent %q", m.Reference, p.Reference)
		case m.To != p.To:
			return fmt.Errorf("it is to %s, the intent to %s", m.To, p.To)
		case m.Text != p.Text:
			return fmt.Errorf("its text (%d characters) is not the intent's (%d characters)", len(m.Text), len(p.Text))
		}
		return nil
	},
	Recorded: func(p Params, id string, s gateway.Status) *Message {
		return &Message{ID: id, To: p.To, Text: p.Text, Reference: p.Reference, Status: s}
	},
}

// Provider is an SMS provider adapter: the gateway.Effect of messages.
type Provider = gateway.Effect[Params, Message]

// Send sends one message exactly once through p, by the engine's call rules
// (gateway.Execute): with a journal that says an earlier attempt may have reached the
// provider, it asks the provider by reference before sending again, and takes a message it
// finds instead of sending a second one. It returns the message, succeeded or declined, or an
// error the engine acts on by behaviour.
func Send(ctx context.Context, j gateway.Journal, p Provider, params Params, opts *gateway.ExecuteOpts) (*Message, error) {
	return gateway.Execute(ctx, j, p, params, opts)
}

// ValidNumber reports whether s is a phone number in E.164 form: "+" and 8 to 15 digits, the
// first not 0 (such as "+14155550100"), the form Params.To takes.
func ValidNumber(s string) bool {
	if len(s) < 9 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
