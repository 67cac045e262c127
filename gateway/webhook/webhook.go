package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/pgsaga/pgsaga/gateway"
)

// Params is one delivery to a partner.
type Params struct {
	// Key is the delivery's idempotency key, sent as the Idempotency-Key header: the partner
	// de-duplicates by it. It is the delivery's reference too. Derive it from the intent
	// (phases.Run.Reference), so every attempt sends the same one.
	Key string
	// Body is the JSON document posted. Send the same bytes on every attempt (json.Marshal of
	// the same value is): a partner compares a re-sent key's body with the first one's.
	Body json.RawMessage
}

// Delivery is a delivery as the partner acknowledged it.
type Delivery struct {
	// ID is the partner's identifier for the delivery (the "id" member of its JSON answer), or
	// Key when it gives none.
	ID string `json:"id"`
	// Key is Params.Key.
	Key string `json:"key"`
	// Status is succeeded once the partner accepted the delivery (a 2xx answer).
	Status gateway.Status `json:"status"`
	// BodySHA256 is the SHA-256 of the body delivered, in hex.
	BodySHA256 string `json:"body_sha256"`
	// Body is the document delivered.
	Body json.RawMessage `json:"body"`
}

// Kind is the kind of a partner's deliveries: found and keyed by Params.Key, and the intent's
// only when the body is the same.
var Kind = &gateway.Kind[Params, Delivery]{
	Name: "delivery",
	Keys: func(p Params) (string, string) { return p.Key, p.Key },
	Verdict: func(d *Delivery) (string, gateway.Status) {
		return d.ID, d.Status
	},
	Match: func(p Params, d *Delivery) error {
		switch {
		case d.Key != p.Key:
			return fmt.Errorf("it has key %q, the intent %q", d.Key, p.Key)
		case d.BodySHA256 != bodySHA256(p.Body):
			return fmt.Errorf("its body (sha256 %s) is not the intent's (sha256 %s)", d.BodySHA256, bodySHA256(p.Body))
		}
		return nil
	},
	Recorded: func(p Params, id string, s gateway.Status) *Delivery {
		return delivered(p, id, s)
	},
}

// delivered is the Delivery of p with the partner's id and status.
func delivered(p Params, id string, s gateway.Status) *Delivery {
	return &Delivery{ID: id, Key: p.Key, Status: s, BodySHA256: bodySHA256(p.Body), Body: p.Body}
}

func bodySHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// Partner is a partner adapter: the gateway.Effect of deliveries. Client is one.
type Partner = gateway.Effect[Params, Delivery]

// Deliver delivers params once through p, by the engine's call rules (gateway.Execute):
// after a lost answer or a crash it sends the same key again, which the partner answers with the
// first delivery instead of taking a second one, for as long as it remembers the key.
func Deliver(ctx context.Context, j gateway.Journal, p Partner, params Params, opts *gateway.ExecuteOpts) (*Delivery, error) {
	return gateway.Execute(ctx, j, p, params, opts)
}
