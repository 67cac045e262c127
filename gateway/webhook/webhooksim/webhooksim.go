// Package webhooksim is a simulated webhook partner for tests and examples: an http.Handler that
// takes deliveries (gateway/webhook) and de-duplicates them by key, with the faults of
// gateway/effectsim.
package webhooksim

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/effectsim"
	"github.com/pgsaga/pgsaga/gateway/webhook"
)

// Config sets up a simulated partner. The zero value (or nil) de-duplicates by key and
// injects no faults.
type Config struct {
	// Idempotency, when true, makes the partner de-duplicate by the Idempotency-Key header: a
	// repeated key is answered with the first delivery and taken once. A pointer so that nil
	// means the default. Defaults to true.
	Idempotency *bool
	// Faults are the faults and delays injected from the start: LatencyBefore holds a request
	// before the partner takes it, FailBefore answers 429 without taking it, LoseResponse closes
	// the connection after taking it. Each defaults to 0: none.
	effectsim.Faults
	// Seed seeds the random source behind the fault probabilities. Defaults to 0.
	Seed uint64
}

// Partner is a partner endpoint for tests and examples: an http.Handler that takes
// deliveries (POST, a JSON body, an Idempotency-Key header) and de-duplicates them by key, with
// the faults of gateway/effectsim; its Simulator counts what it took (Count by key). It answers:
//
//	200 {"id": "dlv_000001"}                       taken, or a repeated key's first answer
//	400 {"error":"invalid_request",…}              no key, or a body that is not JSON
//	409 {"error":"idempotency_key_reused",…}       a known key with another body
//	429 {"error":"throttled",…} + Retry-After: 1   fail-before: not taken
//
// and closes the connection without an answer for a lost answer, or, for one HangNext picked,
// once the client gives up.
type Partner struct {
	// Simulator holds the deliveries taken and scripts the faults (LoseNext, HangNext, FailNext).
	*effectsim.Simulator[webhook.Params, webhook.Delivery]
}

// New returns a simulated partner configured by cfg. It panics when cfg is out of range.
func New(cfg *Config) *Partner {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	off := false
	return &Partner{effectsim.New(&effectsim.Config[webhook.Params, webhook.Delivery]{
		Kind: webhook.Kind,
		Make: func(p webhook.Params, id string, status gateway.Status, _ time.Time) webhook.Delivery {
			return *webhook.Kind.Recorded(p, id, status)
		},
		IDPrefix:    "dlv_",
		Idempotency: c.Idempotency,
		Inquiry:     &off,
		Faults:      c.Faults,
		Seed:        c.Seed,
	})}
}

// maxDelivery bounds a delivery's body.
const maxDelivery = 1 << 20

// ServeHTTP takes one delivery.
func (sp *Partner) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		answer(w, http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed", "message": "deliveries are POSTed"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxDelivery))
	key := r.Header.Get("Idempotency-Key")
	switch {
	case err != nil:
		answer(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "message": "error reading the body"})
		return
	case key == "":
		answer(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "message": "the Idempotency-Key header is required"})
		return
	case !json.Valid(body):
		answer(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "message": "the body must be a JSON document"})
		return
	}
	// The request's context ends when the client gives up: a delivery held by latency-before
	// still lands, and a withheld answer is never written.
	d, err := sp.Send(r.Context(), webhook.Params{Key: key, Body: body})
	switch {
	case err == nil:
		answer(w, http.StatusOK, map[string]string{"id": d.ID})
	case errors.Is(err, effectsim.ErrUnavailable):
		w.Header().Set("Retry-After", "1")
		answer(w, http.StatusTooManyRequests, map[string]string{"error": "throttled", "message": "not taken, try again later"})
	case errors.Is(err, effectsim.ErrKeyReused):
		answer(w, http.StatusConflict, map[string]string{"error": "idempotency_key_reused", "message": "the key was used with another body"})
	default:
		// A lost or withheld answer: the connection closes with nothing written.
		conn, _, hijackErr := http.NewResponseController(w).Hijack()
		if hijackErr != nil {
			panic(http.ErrAbortHandler)
		}
		_ = conn.Close()
	}
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
