package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// ClientOpts are the optional settings of NewClient.
type ClientOpts struct {
	// HTTPClient sends the requests. Its Timeout bounds each call; a call that times out
	// after sending is ambiguous. Defaults to a client with a 10s timeout.
	HTTPClient *http.Client
	// Capabilities, when set, is used as is instead of asking GET /_sim/info, for a gateway
	// that speaks the wire format without the simulator's control endpoints. Defaults to nil.
	Capabilities *gateway.Capabilities
}

// Client is a gateway.Gateway speaking the simulator's wire format over HTTP. It is safe for
// concurrent use.
//
// Classification: a connection that could not be opened and a 5xx answer (the wire format
// answers 5xx only before processing) are retryable; a timeout, a reset or closed connection
// and an unreadable answer after the request was sent are ambiguous; any other 4xx is a
// gateway.PermanentError.
type Client struct {
	base *url.URL
	http *http.Client
	// live is true when the capabilities come from the simulator (not ClientOpts): they are
	// read again on every Capabilities call, since /_sim/faults can change them at run time.
	live bool

	mu   sync.Mutex
	caps gateway.Capabilities
}

// NewClient returns an adapter for the gateway at baseURL (such as "http://127.0.0.1:9090").
// Unless opts.Capabilities is set it learns what the gateway supports from GET /_sim/info
// now, and fails when that cannot be read; Refresh learns it again. KeyRetention is 0.
func NewClient(baseURL string, opts *ClientOpts) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("error parsing gateway URL: %w", err)
	}
	if base.Scheme != "http" && base.Scheme != "https" || base.Host == "" {
		return nil, fmt.Errorf("gateway URL %q must be http(s)://host[:port]", baseURL)
	}
	c := &Client{base: base, http: &http.Client{Timeout: 10 * time.Second}}
	if opts != nil && opts.HTTPClient != nil {
		c.http = opts.HTTPClient
	}
	if opts != nil && opts.Capabilities != nil {
		c.caps = *opts.Capabilities
		return c, nil
	}
	if err := c.Refresh(context.Background()); err != nil {
		return nil, err
	}
	c.live = true
	return c, nil
}

// Refresh reads the gateway's capabilities again from GET /_sim/info, for a simulator whose
// settings were changed at run time.
func (c *Client) Refresh(ctx context.Context) error {
	resp, err := c.do(ctx, http.MethodGet, "/_sim/info", nil, "")
	if err != nil {
		return fmt.Errorf("error reading gateway capabilities: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("error reading gateway capabilities: %w", statusError(resp))
	}
	var in info
	if err := json.NewDecoder(resp.Body).Decode(&in); err != nil {
		return fmt.Errorf("error decoding gateway capabilities: %w", err)
	}
	c.mu.Lock()
	c.caps = gateway.Capabilities{IdempotencyKeys: in.Idempotency, Inquiry: in.Inquiry}
	c.mu.Unlock()
	return nil
}

// Capabilities returns what the gateway supports. A simulator's settings can change at run time
// (POST /_sim/faults), and a stale "keys are honoured" could make a resumed charge a second one,
// so they are read again from GET /_sim/info on every call; if that fails, the last known ones
// are returned.
func (c *Client) Capabilities() gateway.Capabilities {
	if c.live {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = c.Refresh(ctx)
		cancel()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

// Charge sends POST /charges, with the idempotency key when the gateway supports keys.
func (c *Client) Charge(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	body, err := json.Marshal(chargeRequest{Amount: params.Amount, Currency: params.Currency, Reference: params.Reference})
	if err != nil {
		return nil, &gateway.PermanentError{Err: fmt.Errorf("error encoding charge: %w", err)}
	}
	key := ""
	if c.Capabilities().IdempotencyKeys {
		key = params.IdempotencyKey
	}
	resp, err := c.do(ctx, http.MethodPost, "/charges", body, key)
	if err != nil {
		return nil, gateway.TransportError(fmt.Errorf("error sending charge %q: %w", params.Reference, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		var charge gateway.Charge
		if err := json.NewDecoder(resp.Body).Decode(&charge); err != nil {
			// The provider answered success and we could not read what: it may have charged.
			return nil, &gateway.AmbiguousError{Err: fmt.Errorf("error reading charge %q: %w", params.Reference, err)}
		}
		if charge.Status != gateway.ChargeStatusSucceeded && charge.Status != gateway.ChargeStatusDeclined {
			return nil, &gateway.AmbiguousError{Err: fmt.Errorf("charge %q has unknown status %q", params.Reference, charge.Status)}
		}
		return &charge, nil
	case resp.StatusCode >= 500:
		return nil, &gateway.RetryableError{Err: fmt.Errorf("error charging %q: %w", params.Reference, statusError(resp))}
	default:
		return nil, &gateway.PermanentError{Err: fmt.Errorf("error charging %q: %w", params.Reference, statusError(resp))}
	}
}

// Inquire sends GET /charges?reference=R. A 404 means the gateway has no inquiry: an error
// wrapping gateway.ErrUnsupported.
func (c *Client) Inquire(ctx context.Context, reference string) ([]gateway.Charge, error) {
	resp, err := c.do(ctx, http.MethodGet, "/charges?reference="+url.QueryEscape(reference), nil, "")
	if err != nil {
		return nil, gateway.TransportError(fmt.Errorf("error inquiring about %q: %w", reference, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		var out struct {
			Charges []gateway.Charge `json:"charges"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, &gateway.RetryableError{Err: fmt.Errorf("error reading inquiry about %q: %w", reference, err)}
		}
		return out.Charges, nil
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("error inquiring about %q: %w (%w)", reference, gateway.ErrUnsupported, statusError(resp))
	case resp.StatusCode >= 500:
		return nil, &gateway.RetryableError{Err: fmt.Errorf("error inquiring about %q: %w", reference, statusError(resp))}
	default:
		return nil, &gateway.PermanentError{Err: fmt.Errorf("error inquiring about %q: %w", reference, statusError(resp))}
	}
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, idempotencyKey string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		// Without GetBody the transport never re-sends a POST on its own (it would for one
		// carrying an Idempotency-Key): every send is an attempt Execute sees and classifies.
		req.GetBody = nil
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	return c.http.Do(req)
}

// statusError describes an error answer from its JSON body when it has one.
func statusError(resp *http.Response) error {
	var body struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if json.Unmarshal(raw, &body) == nil && body.Error != "" {
		return fmt.Errorf("status %d %s: %s", resp.StatusCode, body.Error, body.Message)
	}
	return fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(raw)))
}
