// Package stripe is a gateway.Gateway on the Stripe API (stripe-go v85), usable against
// Stripe itself or stripe-mock.
//
// Guarantees: every charge carries the derived key as Stripe's Idempotency-Key, so a
// re-sent key within Stripe's 24 hour key window returns the first answer instead of
// charging again. The SDK's own network retries are off: every send is an attempt the
// caller (gateway.Execute) sees and classifies. Inquiry is not offered: Stripe's search is
// eventually consistent (a charge made a moment ago may not be listed yet), so "not found"
// would not prove that a lost attempt did not charge; resolution relies on keys alone.
package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripeapi "github.com/stripe/stripe-go/v85"

	"github.com/pgsaga/pgsaga/gateway"
)

// Config sets up a Gateway.
type Config struct {
	// APIKey is the secret API key (sk_test_… in test mode). Required.
	APIKey string
	// BackendURL is the API's base URL without a path, such as "http://127.0.0.1:12111" for
	// stripe-mock. Defaults to Stripe's production API.
	BackendURL string
	// HTTPClient sends the requests; its Timeout bounds each call, and a call that times
	// out is ambiguous. Defaults to a client with a 30s timeout.
	HTTPClient *http.Client
	// Source is the payment source every charge draws on (a token or a source id).
	// Defaults to "tok_visa", Stripe's test card.
	Source string
	// KeyRetention is how long Stripe remembers an idempotency key. Defaults to 24h.
	KeyRetention time.Duration
}

// WithDefaults returns a copy of cfg with defaults applied.
func (cfg *Config) WithDefaults() Config {
	var out Config
	if cfg != nil {
		out = *cfg
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if out.Source == "" {
		out.Source = "tok_visa"
	}
	if out.KeyRetention == 0 {
		out.KeyRetention = 24 * time.Hour
	}
	return out
}

func (cfg Config) validate() error {
	if cfg.APIKey == "" {
		return errors.New("APIKey is required")
	}
	if cfg.KeyRetention < 0 {
		return fmt.Errorf("KeyRetention must be >= 0, got %s", cfg.KeyRetention)
	}
	return nil
}

// Gateway charges through the Stripe Charges API. It is safe for concurrent use.
type Gateway struct {
	client *stripeapi.Client
	cfg    Config
}

var _ gateway.Gateway = (*Gateway)(nil)

// New returns a Gateway configured by cfg.
func New(cfg *Config) (*Gateway, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("invalid stripe gateway config: %w", err)
	}
	backend := &stripeapi.BackendConfig{
		HTTPClient:        c.HTTPClient,
		MaxNetworkRetries: stripeapi.Int64(0),
		LeveledLogger:     &stripeapi.LeveledLogger{Level: stripeapi.LevelNull},
	}
	if c.BackendURL != "" {
		backend.URL = stripeapi.String(strings.TrimRight(c.BackendURL, "/"))
	}
	client := stripeapi.NewClient(c.APIKey, stripeapi.WithBackends(stripeapi.NewBackendsWithConfig(backend)))
	return &Gateway{client: client, cfg: c}, nil
}

// Capabilities: idempotency keys kept for Config.KeyRetention, no inquiry (see the package
// documentation).
func (g *Gateway) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{IdempotencyKeys: true, KeyRetention: g.cfg.KeyRetention}
}

// Charge creates a Stripe charge for params, with params.Reference in its metadata and
// params.IdempotencyKey as its Idempotency-Key. A card error is a declined Charge, not an
// error.
func (g *Gateway) Charge(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	if err := validateParams(params); err != nil {
		return nil, &gateway.PermanentError{Err: err}
	}
	p := &stripeapi.ChargeCreateParams{
		Amount:   stripeapi.Int64(params.Amount),
		Currency: stripeapi.String(strings.ToLower(params.Currency)),
	}
	if err := p.SetSource(g.cfg.Source); err != nil {
		return nil, &gateway.PermanentError{Err: fmt.Errorf("error setting charge source: %w", err)}
	}
	p.AddMetadata("reference", params.Reference)
	if params.IdempotencyKey != "" {
		p.SetIdempotencyKey(params.IdempotencyKey)
	}
	ch, err := g.client.V1Charges.Create(ctx, p)
	if err != nil {
		return classify(params, fmt.Errorf("error creating stripe charge %q: %w", params.Reference, err))
	}
	charge := &gateway.Charge{
		ID:        ch.ID,
		Amount:    ch.Amount,
		Currency:  strings.ToUpper(string(ch.Currency)),
		Reference: params.Reference,
	}
	if ref := ch.Metadata["reference"]; ref != "" {
		charge.Reference = ref
	}
	switch ch.Status {
	case stripeapi.ChargeStatusSucceeded:
		charge.Status = gateway.ChargeStatusSucceeded
	case stripeapi.ChargeStatusFailed:
		charge.Status = gateway.ChargeStatusDeclined
	default:
		// Pending: Stripe acted but has no verdict yet; re-sending the key returns it again.
		return nil, &gateway.AmbiguousError{Err: fmt.Errorf("stripe charge %s for %q is %s", ch.ID, params.Reference, ch.Status)}
	}
	return charge, nil
}

// Inquire is not supported (see the package documentation): it returns an error wrapping
// gateway.ErrUnsupported.
func (g *Gateway) Inquire(context.Context, string) ([]gateway.Charge, error) {
	return nil, fmt.Errorf("stripe inquiry by reference: %w", gateway.ErrUnsupported)
}

// classify turns a failed charge call into a decline or a classified error.
//
//   - card_error (402): Stripe declined; a result, with the failed charge's id.
//   - 429 (rate limit, lock timeout): refused before acting; retryable.
//   - 409 (the same key in flight elsewhere) and 5xx: Stripe documents these results as
//     indeterminate; ambiguous, resolved by re-sending the same key.
//   - other 4xx: the request is wrong; permanent.
//   - a connection that could not be opened: retryable; any other transport failure
//     (timeout, reset, unreadable answer): ambiguous.
func classify(params gateway.ChargeParams, err error) (*gateway.Charge, error) {
	var se *stripeapi.Error
	if errors.As(err, &se) {
		switch {
		case se.Type == stripeapi.ErrorTypeCard:
			return &gateway.Charge{
				ID:        se.ChargeID,
				Amount:    params.Amount,
				Currency:  params.Currency,
				Reference: params.Reference,
				Status:    gateway.ChargeStatusDeclined,
			}, nil
		case se.HTTPStatusCode == http.StatusTooManyRequests:
			return nil, &gateway.RetryableError{Err: err}
		case se.HTTPStatusCode == http.StatusConflict || se.HTTPStatusCode >= 500:
			return nil, &gateway.AmbiguousError{Err: err}
		case se.HTTPStatusCode >= 400:
			return nil, &gateway.PermanentError{Err: err}
		}
		return nil, &gateway.AmbiguousError{Err: err}
	}
	return nil, gateway.TransportError(err)
}

func validateParams(p gateway.ChargeParams) error {
	switch {
	case p.Amount <= 0:
		return fmt.Errorf("invalid charge: amount must be > 0, got %d", p.Amount)
	case p.Currency == "":
		return errors.New("invalid charge: currency is required")
	case p.Reference == "":
		return errors.New("invalid charge: reference is required")
	}
	return nil
}
