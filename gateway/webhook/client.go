package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
)

// Config sets up a Client.
type Config struct {
	// URL is the partner's endpoint, such as "https://partner.example/hooks/orders". Required.
	URL string
	// Header holds headers every delivery carries besides Content-Type and Idempotency-Key,
	// such as the partner's authentication. Defaults to none.
	Header http.Header
	// HTTPClient sends the deliveries. Defaults to a client whose Timeout is RequestTimeout.
	HTTPClient *http.Client
	// RequestTimeout is the per-request timeout the client declares
	// (gateway.Capabilities.RequestTimeout): gateway.Execute gives up a delivery without an
	// answer by then, as unknown, and sends the key again within the call. Defaults to 5s.
	RequestTimeout time.Duration
	// KeyRetention is how long the partner remembers an idempotency key: a key older than this
	// is never re-sent (the engine parks the key for an operator). Set it to the partner's
	// documented window. Defaults to 24h.
	KeyRetention time.Duration
}

// withDefaults returns a copy of cfg with defaults applied.
func (cfg *Config) withDefaults() Config {
	var out Config
	if cfg != nil {
		out = *cfg
	}
	if out.RequestTimeout == 0 {
		out.RequestTimeout = 5 * time.Second
	}
	if out.KeyRetention == 0 {
		out.KeyRetention = 24 * time.Hour
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{Timeout: out.RequestTimeout}
	}
	return out
}

func (cfg Config) validate() error {
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "":
		return errors.New("URL is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Errorf("URL %q must be http(s)://host[:port][/path]", cfg.URL)
	case cfg.RequestTimeout < 0:
		return fmt.Errorf("RequestTimeout must be >= 0, got %s", cfg.RequestTimeout)
	case cfg.KeyRetention < 0:
		return fmt.Errorf("KeyRetention must be >= 0, got %s", cfg.KeyRetention)
	}
	return nil
}

// Client delivers to a partner that de-duplicates by the Idempotency-Key header: an HTTP POST
// of Params.Body (application/json) to Config.URL. It is safe for concurrent use.
//
// Classification of an answer: a 2xx is a succeeded Delivery. A connection that could not be
// opened, a context ended before sending, a 429 (throttled) and a 408 (the partner stopped
// waiting for the request) did nothing (gateway.NotDone). A 409 (the key is being
// processed, or was used with another body), a 5xx, a timeout, a reset connection may have
// followed the partner acting (gateway.Unknown): the engine sends the key again. Any other
// 4xx refuses the delivery as it is (phases.Permanent). The partner cannot be asked what
// it received: no inquiry, no read back by id.
type Client struct {
	cfg Config
}

var _ Partner = (*Client)(nil)

// New returns a Client configured by cfg.
func New(cfg *Config) (*Client, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("invalid webhook config: %w", err)
	}
	return &Client{cfg: c}, nil
}

// Kind is the kind of the client's effects.
func (c *Client) Kind() *gateway.Kind[Params, Delivery] { return Kind }

// Capabilities: idempotency keys kept for Config.KeyRetention, no inquiry, Config.RequestTimeout.
func (c *Client) Capabilities() gateway.Capabilities {
	return gateway.Capabilities{IdempotencyKeys: true, KeyRetention: c.cfg.KeyRetention, RequestTimeout: c.cfg.RequestTimeout}
}

// maxAnswer bounds how much of a partner's answer is read.
const maxAnswer = 64 << 10

// Send posts the delivery once.
func (c *Client) Send(ctx context.Context, p Params) (*Delivery, error) {
	if p.Key == "" || !json.Valid(p.Body) {
		return nil, phases.Permanent(errors.New("invalid delivery: a key and a JSON body are required"))
	}
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("delivery %q not sent: %w", p.Key, err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.URL, bytes.NewReader(p.Body))
	if err != nil {
		return nil, phases.Permanent(fmt.Errorf("error building delivery %q: %w", p.Key, err))
	}
	for name, values := range c.cfg.Header {
		req.Header[name] = values
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", p.Key)
	// Without GetBody the transport never re-sends the POST on its own: every send is an
	// attempt the engine sees and classifies.
	req.GetBody = nil
	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, gateway.TransportError(fmt.Errorf("error delivering %q: %w", p.Key, err))
	}
	defer resp.Body.Close()
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	status := resp.StatusCode
	if status >= 200 && status < 300 {
		// Accepted: the answer's id when it gives one (a body cut short changes nothing).
		var body struct {
			ID string `json:"id"`
		}
		if readErr != nil || json.Unmarshal(answer, &body) != nil || body.ID == "" {
			body.ID = p.Key
		}
		return delivered(p, body.ID, gateway.StatusSucceeded), nil
	}
	err = fmt.Errorf("error delivering %q: partner answered %d: %s", p.Key, status, strings.TrimSpace(string(answer)))
	switch {
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout:
		return nil, gateway.NotDone(err)
	case status == http.StatusConflict || status >= 500:
		return nil, gateway.Unknown(err)
	}
	return nil, phases.Permanent(err)
}

// Inquire is not supported: a partner cannot be asked what it received.
func (c *Client) Inquire(context.Context, string) ([]Delivery, error) {
	return nil, fmt.Errorf("webhook inquiry: %w", gateway.ErrUnsupported)
}

// Get is not supported: a partner's deliveries cannot be read back.
func (c *Client) Get(context.Context, string) (*Delivery, error) {
	return nil, fmt.Errorf("webhook read back: %w", gateway.ErrUnsupported)
}
