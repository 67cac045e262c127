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
	"github.com/pgsaga/pgsaga/phases"
)

// ClientOpts are the optional settings of NewClient.
type ClientOpts struct {
	// HTTPClient sends the requests. Its Timeout bounds each call; a call that times out
	// after sending is ambiguous. Defaults to a client with a 10s timeout.
	HTTPClient *http.Client
	// Capabilities, when set, is used instead of asking GET /_sim/info, for a gateway that
	// speaks the wire format without the simulator's control endpoints; its RequestTimeout is
	// RequestTimeout's. Defaults to nil.
	Capabilities *gateway.Capabilities
	// RequestTimeout is the per-request timeout the client declares
	// (gateway.Capabilities.RequestTimeout): gateway.Execute gives up a request that takes
	// longer and goes on to resolve it within the call. Defaults to DefaultRequestTimeout (5s).
	RequestTimeout time.Duration
	// ControlToken is the simulator's control token (Config.ControlToken, gateway-sim
	// --control-token), sent as a Bearer token with GET /_sim/info. Defaults to none.
	ControlToken string
}

// Client is a gateway.Gateway speaking the simulator's wire format over HTTP. It is safe for
// concurrent use.
//
// Classification of a charge: a connection that could not be opened, a context ended before
// sending, and a 503 whose body says {"error":"not_processed"} (the simulator's explicit
// refusal) certainly charged nothing (gateway.NotDone); any other 5xx (a proxy's 502 may
// follow a charge upstream), a timeout, a reset or closed connection and an unreadable answer
// after the request was sent may have charged (gateway.Unknown), and so may a 422
// idempotency_key_reused (an earlier request under the same key reached the provider with other
// parameters: it may have charged, and refusing this one as permanent would let the engine
// compensate after money moved); any other 4xx is phases.Permanent.
type Client struct {
	base         *url.URL
	http         *http.Client
	controlToken string
	// live is true when the capabilities come from the simulator (not ClientOpts): they are
	// read again on every Capabilities call, since /_sim/faults can change them at run time.
	live bool
	// requestTimeout is ClientOpts.RequestTimeout, declared in every Capabilities.
	requestTimeout time.Duration

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
	c := &Client{base: base, http: &http.Client{Timeout: 10 * time.Second}, requestTimeout: DefaultRequestTimeout}
	if opts != nil && opts.HTTPClient != nil {
		c.http = opts.HTTPClient
	}
	if opts != nil && opts.RequestTimeout < 0 {
		return nil, fmt.Errorf("ClientOpts.RequestTimeout must be >= 0, got %s", opts.RequestTimeout)
	}
	if opts != nil && opts.RequestTimeout > 0 {
		c.requestTimeout = opts.RequestTimeout
	}
	if opts != nil {
		c.controlToken = opts.ControlToken
	}
	if opts != nil && opts.Capabilities != nil {
		c.caps = *opts.Capabilities
		c.caps.RequestTimeout = c.requestTimeout
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
		return fmt.Errorf("error reading gateway capabilities: %w", readError(resp))
	}
	var in info
	if err := json.NewDecoder(resp.Body).Decode(&in); err != nil {
		return fmt.Errorf("error decoding gateway capabilities: %w", err)
	}
	c.mu.Lock()
	c.caps = gateway.Capabilities{
		IdempotencyKeys: in.Idempotency,
		Inquiry:         in.Inquiry,
		MaxInFlight:     time.Duration(in.MaxInFlightMS) * time.Millisecond,
		RequestTimeout:  c.requestTimeout,
	}
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

// Kind returns gateway.Charges.
func (c *Client) Kind() *gateway.Kind[gateway.ChargeParams, gateway.Charge] { return gateway.Charges }

// Send sends POST /charges, with the idempotency key when the gateway supports keys.
func (c *Client) Send(ctx context.Context, params gateway.ChargeParams) (*gateway.Charge, error) {
	body, err := json.Marshal(chargeRequest{Amount: params.Amount, Currency: params.Currency, Reference: params.Reference})
	if err != nil {
		return nil, phases.Permanent(fmt.Errorf("error encoding charge: %w", err))
	}
	key := ""
	if c.Capabilities().IdempotencyKeys {
		key = params.IdempotencyKey
	}
	if err := ctx.Err(); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("charge %q not sent: %w", params.Reference, err))
	}
	resp, err := c.do(ctx, http.MethodPost, "/charges", body, key)
	if err != nil {
		return nil, gateway.TransportError(fmt.Errorf("error sending charge %q: %w", params.Reference, err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK:
		charge, err := decodeCharge(resp)
		if err != nil {
			// The provider answered success and we could not read what: it may have charged.
			return nil, gateway.Unknown(fmt.Errorf("error reading charge %q: %w", params.Reference, err))
		}
		return charge, nil
	case resp.StatusCode >= 500:
		e := readError(resp)
		err := fmt.Errorf("error charging %q: %w", params.Reference, e)
		if resp.StatusCode == http.StatusServiceUnavailable && e.Code == notProcessed {
			return nil, gateway.NotDone(err)
		}
		return nil, gateway.Unknown(err)
	default:
		e := readError(resp)
		err := fmt.Errorf("error charging %q: %w", params.Reference, e)
		if e.Code == codeKeyReused {
			return nil, gateway.Unknown(err)
		}
		return nil, phases.Permanent(err)
	}
}

// Inquire sends GET /charges?reference=R. A 404 means the gateway has no inquiry: an error
// wrapping gateway.ErrUnsupported. An inquiry changes nothing, so every failure may be retried.
func (c *Client) Inquire(ctx context.Context, reference string) ([]gateway.Charge, error) {
	resp, err := c.read(ctx, "/charges?reference="+url.QueryEscape(reference))
	if err != nil {
		return nil, fmt.Errorf("error inquiring about %q: %w", reference, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("error inquiring about %q: %w (%w)", reference, gateway.ErrUnsupported, readError(resp))
	}
	var out struct {
		Charges []gateway.Charge `json:"charges"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&out); err != nil {
		return nil, gateway.NotDone(fmt.Errorf("error reading inquiry about %q: %w", reference, err))
	}
	return out.Charges, nil
}

// Get sends GET /charges/{id}. A 404 is gateway.ErrNotFound when the simulator says so, else
// gateway.ErrUnsupported (a gateway without the endpoint).
func (c *Client) Get(ctx context.Context, id string) (*gateway.Charge, error) {
	resp, err := c.read(ctx, "/charges/"+url.PathEscape(id))
	if err != nil {
		return nil, fmt.Errorf("error reading charge %q: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		e := readError(resp)
		if e.Code == "not_found" {
			return nil, fmt.Errorf("error reading charge %q: %w (%w)", id, gateway.ErrNotFound, e)
		}
		return nil, fmt.Errorf("error reading charge %q: %w (%w)", id, gateway.ErrUnsupported, e)
	}
	charge, err := decodeCharge(resp)
	if err != nil {
		return nil, gateway.NotDone(fmt.Errorf("error reading charge %q: %w", id, err))
	}
	return charge, nil
}

// read sends a GET that changes nothing at the provider and returns a 200 or 404 answer; any
// other answer or failure is gateway.NotDone (a read is always safe to repeat), except
// a 4xx other than 404, phases.Permanent.
func (c *Client) read(ctx context.Context, path string) (*http.Response, error) {
	resp, err := c.do(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return nil, gateway.NotDone(err)
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound:
		return resp, nil
	case resp.StatusCode >= 500:
		defer resp.Body.Close()
		return nil, gateway.NotDone(readError(resp))
	default:
		defer resp.Body.Close()
		return nil, phases.Permanent(readError(resp))
	}
}

// decodeCharge reads a charge answer; a status other than succeeded, declined or pending is an
// error, never taken for one of them.
func decodeCharge(resp *http.Response) (*gateway.Charge, error) {
	var charge gateway.Charge
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&charge); err != nil {
		return nil, err
	}
	if !charge.Status.Final() && charge.Status != gateway.StatusPending {
		return nil, fmt.Errorf("charge %s has unknown status %q", charge.ID, charge.Status)
	}
	return &charge, nil
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
	if c.controlToken != "" && strings.HasPrefix(path, "/_sim/") {
		req.Header.Set("Authorization", "Bearer "+c.controlToken)
	}
	return c.http.Do(req)
}

// statusError is an error answer: its status and, when its body is the simulator's JSON, its
// code and message.
type statusError struct {
	Status  int
	Code    string
	Message string
}

func (e *statusError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("status %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("status %d %s: %s", e.Status, e.Code, e.Message)
}

// readError reads an error answer's body.
func readError(resp *http.Response) *statusError {
	var body struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if json.Unmarshal(raw, &body) == nil && body.Error != "" {
		return &statusError{Status: resp.StatusCode, Code: body.Error, Message: body.Message}
	}
	return &statusError{Status: resp.StatusCode, Message: strings.TrimSpace(string(raw))}
}
