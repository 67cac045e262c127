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
	// out is ambiguous. Defaults to a client whose Timeout is RequestTimeout.
	HTTPClient *http.Client
	// RequestTimeout is the per-request timeout the gateway declares
	// (gateway.Capabilities.RequestTimeout): gateway.Execute gives up a request to Stripe that
	// takes longer, as unknown, and resolves it within the call (the same key again, which
	// Stripe answers with the first request's result once it has one). A card charge usually
	// answers within a few seconds; the default leaves room for a slow one and stays under half
	// of the engine's default call timeout (20s). Defaults to 10s.
	RequestTimeout time.Duration
	// PaymentMethod is the PaymentMethod every charge is confirmed with (pm_…). Defaults to
	// "pm_card_visa", Stripe's test card.
	PaymentMethod string
	// Customer is the customer PaymentMethod is saved to (cus_…), which Stripe requires when it
	// is. Defaults to "": none.
	Customer string
	// OffSession says the customer is not there during the charge (a card saved for later use),
	// so that Stripe can apply the exemptions of charges the merchant starts; a charge that needs
	// the customer anyway fails (authentication_required) instead of waiting for them. When
	// false, the charge is sent with error_on_requires_action, which fails it the same way.
	// Defaults to false.
	OffSession bool
	// StatementDescriptorSuffix is appended to the account's statement descriptor on the
	// customer's statement. Defaults to "": the account's descriptor alone.
	StatementDescriptorSuffix string
	// KeyRetention is how long Stripe remembers an idempotency key. Defaults to 24h, the age
	// from which Stripe may prune a key.
	KeyRetention time.Duration
}

// WithDefaults returns a copy of cfg with defaults applied.
func (cfg *Config) WithDefaults() Config {
	var out Config
	if cfg != nil {
		out = *cfg
	}
	if out.RequestTimeout == 0 {
		out.RequestTimeout = 10 * time.Second
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{Timeout: out.RequestTimeout}
	}
	if out.PaymentMethod == "" {
		out.PaymentMethod = "pm_card_visa"
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
	if cfg.RequestTimeout < 0 {
		return fmt.Errorf("RequestTimeout must be >= 0, got %s", cfg.RequestTimeout)
	}
	return nil
}

// Gateway charges through Stripe's PaymentIntents API. It is safe for concurrent use.
type Gateway struct {
	client *stripeapi.Client
	cfg    Config
}

var (
	_ gateway.Gateway = (*Gateway)(nil)
	_ gateway.Lister  = (*Gateway)(nil)
)

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
// documentation), so MaxInFlight is not used, and Config.RequestTimeout.
func (g *Gateway) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{IdempotencyKeys: true, KeyRetention: g.cfg.KeyRetention, RequestTimeout: g.cfg.RequestTimeout}
}

// Kind returns gateway.Charges.
func (g *Gateway) Kind() *gateway.Kind[gateway.ChargeParams, gateway.Charge] { return gateway.Charges }

// Send creates and confirms a PaymentIntent for params, with params.Reference in its
// metadata and params.IdempotencyKey as its Idempotency-Key. A card error is a declined Charge,
// not an error; an unknown outcome is answered by the PaymentIntent found by reference when
// there is one (see the package documentation).
func (g *Gateway) Send(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	if err := validateParams(params); err != nil {
		return nil, phases.Permanent(err)
	}
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("stripe charge %q not sent: %w", params.Reference, err))
	}
	pi, err := g.client.V1PaymentIntents.Create(ctx, g.createParams(params))
	if err != nil {
		return g.classify(ctx, params, fmt.Errorf("error creating stripe PaymentIntent %q: %w", params.Reference, err))
	}
	return toCharge(pi, params.Reference)
}

// createParams is the one request that creates and confirms the PaymentIntent for params. It
// is the same on every attempt (Stripe compares a re-sent key's parameters with the first's).
func (g *Gateway) createParams(params gateway.ChargeParams) *stripeapi.PaymentIntentCreateParams {
	p := &stripeapi.PaymentIntentCreateParams{
		Amount:        stripeapi.Int64(params.Amount),
		Currency:      stripeapi.String(strings.ToLower(params.Currency)),
		PaymentMethod: stripeapi.String(g.cfg.PaymentMethod),
		Confirm:       stripeapi.Bool(true),
		AutomaticPaymentMethods: &stripeapi.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled:        stripeapi.Bool(true),
			AllowRedirects: stripeapi.String(string(stripeapi.PaymentIntentAutomaticPaymentMethodsAllowRedirectsNever)),
		},
		Description: stripeapi.String(params.Reference),
	}
	if g.cfg.Customer != "" {
		p.Customer = stripeapi.String(g.cfg.Customer)
	}
	if g.cfg.OffSession {
		p.OffSession = stripeapi.Bool(true)
	} else {
		p.ErrorOnRequiresAction = stripeapi.Bool(true)
	}
	if g.cfg.StatementDescriptorSuffix != "" {
		p.StatementDescriptorSuffix = stripeapi.String(g.cfg.StatementDescriptorSuffix)
	}
	p.AddMetadata(referenceKey, params.Reference)
	if params.IdempotencyKey != "" {
		p.SetIdempotencyKey(params.IdempotencyKey)
	}
	return p
}

// Get retrieves a PaymentIntent (or a charge of the Charges API, ch_…) by id as it stands now.
// Reads change nothing, so every failure but a refusal may be retried (gateway.NotDone);
// an unknown id is gateway.ErrNotFound.
func (g *Gateway) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	if strings.HasPrefix(id, "ch_") {
		ch, err := g.client.V1Charges.Retrieve(ctx, id, nil)
		if err != nil {
			return nil, readError(fmt.Errorf("error retrieving stripe charge %q: %w", id, err))
		}
		return fromChargesAPI(ch)
	}
	pi, err := g.client.V1PaymentIntents.Retrieve(ctx, id, nil)
	if err != nil {
		return nil, readError(fmt.Errorf("error retrieving stripe PaymentIntent %q: %w", id, err))
	}
	return toCharge(pi, "")
}

// readError classifies a failed read: an unknown id is gateway.ErrNotFound, a refusal (a 4xx but
// 429) phases.Permanent, anything else gateway.NotDone (a read changes nothing).
func readError(err error) error {
	var se *stripeapi.Error
	switch {
	case errors.As(err, &se) && se.Code == stripeapi.ErrorCodeResourceMissing:
		return fmt.Errorf("%w: %w", gateway.ErrNotFound, err)
	case errors.As(err, &se) && se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500 && se.HTTPStatusCode != http.StatusTooManyRequests:
		return phases.Permanent(err)
	}
	return gateway.NotDone(err)
}

// Inquire is not supported (see the package documentation): it returns an error wrapping
// gateway.ErrUnsupported.
func (g *Gateway) Inquire(context.Context, string) ([]gateway.Charge, error) {
	return nil, fmt.Errorf("stripe inquiry by reference: %w", gateway.ErrUnsupported)
}

// classify turns a failed create call into a decline, a PaymentIntent read back, or a
// classified error. When the outcome is unknown Stripe may hold the PaymentIntent, and re-sending
// the key would only replay this answer: it is read back by reference, and taken when found and
// it is this charge (amount and currency); one for another amount or currency is
// gateway.ErrCannotResolve, never taken for it.
func (g *Gateway) classify(ctx context.Context, params gateway.ChargeParams, err error) (*gateway.Charge, error) {
	charge, err := classifyError(params, err)
	if charge != nil || gateway.Classify(err) != phases.CallOutcomeUnknown {
		return charge, err
	}
	found, findErr := g.find(ctx, params.Reference)
	switch {
	case found == nil:
		return nil, fmt.Errorf("%w (read back: %w)", err, findErr)
	case found.Amount != params.Amount || !strings.EqualFold(found.Currency, params.Currency):
		return nil, fmt.Errorf("%w (read back PaymentIntent %s for %q, %d %s, asked %d %s: it does not match the intent: %w)",
			err, found.ID, params.Reference, found.Amount, found.Currency, params.Amount, params.Currency, gateway.ErrCannotResolve)
	}
	return found, nil
}

// classifyError classifies a failed create call by what Stripe documents.
//
//   - card_error (402): Stripe declined; a result, with the PaymentIntent's id.
//   - 429 (rate limit, lock timeout): refused before acting; not done.
//   - idempotency_error: the key reached Stripe before, with other parameters or on another
//     endpoint, and that request may have charged; unknown. So is 409 (the same key in flight).
//   - 5xx: indeterminate; unknown.
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
		return declined(params, se), nil
	case se.HTTPStatusCode == http.StatusTooManyRequests:
		return nil, gateway.NotDone(err)
	case se.Type == stripeapi.ErrorTypeIdempotency || se.HTTPStatusCode == http.StatusConflict:
		return nil, gateway.Unknown(err)
	case se.HTTPStatusCode >= 400 && se.HTTPStatusCode < 500:
		return nil, phases.Permanent(err)
	}
	return nil, gateway.Unknown(err)
}

// declined is the declined Charge a card error stands for: the PaymentIntent it carries (its id
// and creation time), for the charge params asked.
func declined(params gateway.ChargeParams, se *stripeapi.Error) *gateway.Charge {
	charge := &gateway.Charge{
		ID:        se.ChargeID,
		Amount:    params.Amount,
		Currency:  params.Currency,
		Reference: params.Reference,
		Status:    gateway.StatusDeclined,
	}
	if pi := se.PaymentIntent; pi != nil && pi.ID != "" {
		charge.ID, charge.CreatedAt = pi.ID, createdAt(pi.Created)
	}
	return charge
}

// errNotListed is a search that found no PaymentIntent for the reference: it proves nothing,
// since search lags behind writes.
var errNotListed = errors.New("no PaymentIntent listed for the reference yet")

// find reads back the PaymentIntent Stripe holds for reference, a succeeded one in preference,
// by searching the metadata every one carries. It returns an error saying why when it finds none.
func (g *Gateway) find(ctx context.Context, reference string) (*gateway.Charge, error) {
	q := &stripeapi.PaymentIntentSearchParams{SearchParams: stripeapi.SearchParams{
		Query: fmt.Sprintf("metadata['%s']:'%s'", referenceKey, strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(reference)),
	}}
	var found *gateway.Charge
	for pi, err := range g.client.V1PaymentIntents.Search(ctx, q).All(ctx) {
		if err != nil {
			return nil, fmt.Errorf("error searching stripe PaymentIntents for %q: %w", reference, err)
		}
		charge, err := toCharge(pi, "")
		if err != nil || charge.Reference != reference {
			continue
		}
		if found == nil || charge.Status == gateway.StatusSucceeded {
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
