// Package stripe is a gateway.Gateway on the Stripe API (stripe-go v85), usable against
// Stripe itself or stripe-mock.
//
// Guarantees: every charge carries the derived key as Stripe's Idempotency-Key, so a
// re-sent key within Stripe's 24 hour key window returns the first answer instead of
// charging again. The SDK's own network retries are off: every send is an attempt the
// caller (gateway.Execute) sees and classifies.
//
// Stripe saves a key's first answer and replays it for the key's life, a pending charge and a
// 500 included, so re-sending a key can settle neither: a pending charge is answered as
// gateway.ChargeStatusPending (gateway.Execute then reads it back by id with Get, never
// re-sending it), and a 5xx (or any answer whose outcome is unknown) is resolved by reading the
// charge back by the reference kept in its metadata (Stripe's charge search). Search is eventually consistent (Stripe: usually under a
// minute, up to an hour in outages), so a charge it finds settles the call while an empty
// answer proves nothing: the call stays unknown (an UnknownError; a later re-send of the key is
// a harmless replay followed by another search) until the charge shows up or the key leaves its
// window (gateway.ErrKeyExpired: parked for an operator). For the same reason Inquiry is not
// offered.
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
	"github.com/pgsaga/pgsaga/phases"
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
// documentation), so MaxInFlight is not used.
func (g *Gateway) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{IdempotencyKeys: true, KeyRetention: g.cfg.KeyRetention}
}

// Charge creates a Stripe charge for params, with params.Reference in its metadata and
// params.IdempotencyKey as its Idempotency-Key. A card error is a declined Charge, not an
// error; a 5xx is answered by the charge found by reference when there is one (see the package
// documentation).
func (g *Gateway) Charge(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	if err := validateParams(params); err != nil {
		return nil, &gateway.PermanentError{Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &gateway.NotDoneError{Err: fmt.Errorf("stripe charge %q not sent: %w", params.Reference, err)}
	}
	p := &stripeapi.ChargeCreateParams{
		Amount:   stripeapi.Int64(params.Amount),
		Currency: stripeapi.String(strings.ToLower(params.Currency)),
	}
	if err := p.SetSource(g.cfg.Source); err != nil {
		return nil, &gateway.PermanentError{Err: fmt.Errorf("error setting charge source: %w", err)}
	}
	p.AddMetadata(referenceKey, params.Reference)
	if params.IdempotencyKey != "" {
		p.SetIdempotencyKey(params.IdempotencyKey)
	}
	ch, err := g.client.V1Charges.Create(ctx, p)
	if err != nil {
		return g.classify(ctx, params, fmt.Errorf("error creating stripe charge %q: %w", params.Reference, err))
	}
	return toCharge(ch, params.Reference)
}

// Get retrieves a charge by id as it stands now. Reads change nothing, so every failure but a
// refusal may be retried (a gateway.NotDoneError); an unknown id is gateway.ErrNotFound.
func (g *Gateway) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	ch, err := g.client.V1Charges.Retrieve(ctx, id, nil)
	if err != nil {
		err = fmt.Errorf("error retrieving stripe charge %q: %w", id, err)
		var se *stripeapi.Error
		switch {
		case errors.As(err, &se) && se.Code == stripeapi.ErrorCodeResourceMissing:
			return nil, fmt.Errorf("%w: %w", gateway.ErrNotFound, err)
		case errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != http.StatusTooManyRequests:
			return nil, &gateway.PermanentError{Err: err}
		}
		return nil, &gateway.NotDoneError{Err: err}
	}
	return toCharge(ch, "")
}

// Inquire is not supported (see the package documentation): it returns an error wrapping
// gateway.ErrUnsupported.
func (g *Gateway) Inquire(context.Context, string) ([]gateway.Charge, error) {
	return nil, fmt.Errorf("stripe inquiry by reference: %w", gateway.ErrUnsupported)
}

// referenceKey is the metadata key holding ChargeParams.Reference on every charge.
const referenceKey = "reference"

// toCharge maps a Stripe charge: succeeded, failed (declined) or pending; any other status is
// unknown, never taken for one of those. reference is used when the charge carries none.
func toCharge(ch *stripeapi.Charge, reference string) (*gateway.Charge, error) {
	charge := &gateway.Charge{
		ID:        ch.ID,
		Amount:    ch.Amount,
		Currency:  strings.ToUpper(string(ch.Currency)),
		Reference: reference,
	}
	if ref := ch.Metadata[referenceKey]; ref != "" {
		charge.Reference = ref
	}
	switch ch.Status {
	case stripeapi.ChargeStatusSucceeded:
		charge.Status = gateway.ChargeStatusSucceeded
	case stripeapi.ChargeStatusFailed:
		charge.Status = gateway.ChargeStatusDeclined
	case stripeapi.ChargeStatusPending:
		charge.Status = gateway.ChargeStatusPending
	default:
		return nil, &gateway.UnknownError{Err: fmt.Errorf("stripe charge %s for %q has status %q", ch.ID, charge.Reference, ch.Status)}
	}
	return charge, nil
}

// classify turns a failed charge call into a decline, a charge read back, or a classified
// error. When the outcome is unknown Stripe may hold the charge, and re-sending the key would
// only replay this answer: the charge is read back by reference, and taken when found.
func (g *Gateway) classify(ctx context.Context, params gateway.ChargeParams, err error) (*gateway.Charge, error) {
	charge, err := classifyError(params, err)
	if charge != nil || gateway.Classify(nil, err) != phases.CallOutcomeUnknown {
		return charge, err
	}
	found, findErr := g.find(ctx, params.Reference)
	if found != nil {
		return found, nil
	}
	return nil, fmt.Errorf("%w (read back: %w)", err, findErr)
}

// classifyError classifies a failed charge call by what Stripe documents.
//
//   - card_error (402): Stripe declined; a result, with the failed charge's id.
//   - 429 (rate limit, lock timeout): refused before acting; not done.
//   - 5xx: indeterminate; unknown.
//   - 409 (the same key in flight elsewhere): unknown.
//   - other 4xx: the request is wrong; permanent.
//   - a connection that could not be opened: not done; any other transport failure
//     (timeout, reset, an answer that is not Stripe's JSON such as a proxy's 502): unknown.
func classifyError(params gateway.ChargeParams, err error) (*gateway.Charge, error) {
	var se *stripeapi.Error
	if !errors.As(err, &se) {
		return nil, gateway.TransportError(err)
	}
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
		return nil, &gateway.NotDoneError{Err: err}
	case se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != http.StatusConflict:
		return nil, &gateway.PermanentError{Err: err}
	}
	return nil, &gateway.UnknownError{Err: err}
}

// errNotListed is a search that found no charge for the reference: it proves nothing, since
// search lags behind writes.
var errNotListed = errors.New("no charge listed for the reference yet")

// find reads back the charge Stripe holds for reference, a succeeded one in preference, by
// searching the metadata every charge carries. It returns an error saying why when it finds
// none.
func (g *Gateway) find(ctx context.Context, reference string) (*gateway.Charge, error) {
	q := &stripeapi.ChargeSearchParams{SearchParams: stripeapi.SearchParams{
		Query: fmt.Sprintf("metadata['%s']:'%s'", referenceKey, strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(reference)),
	}}
	var found *gateway.Charge
	for ch, err := range g.client.V1Charges.Search(ctx, q).All(ctx) {
		if err != nil {
			return nil, fmt.Errorf("error searching stripe charges for %q: %w", reference, err)
		}
		charge, err := toCharge(ch, "")
		if err != nil || charge.Reference != reference {
			continue
		}
		if found == nil || charge.Status == gateway.ChargeStatusSucceeded {
			found = charge
		}
	}
	if found == nil {
		return nil, errNotListed
	}
	return found, nil
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
