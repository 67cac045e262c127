package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pgsaga/pgsaga/internal/idemkey"
)

// headerIdempotencyKey is the request header that carries an intent's key.
const headerIdempotencyKey = "Idempotency-Key"

// headerIdempotentReplayed is the response header a server sets to "true"
// when it answers with a stored response instead of executing the request.
const headerIdempotentReplayed = "Idempotent-Replayed"

// Intent is one decision by a user ("pay 2000 on invoice inv_1"), together
// with the idempotency key that names it. Every attempt to submit an intent,
// from this process or after a restart, sends the same Key, so the server can
// tell a retry from a new decision.
//
// An Intent is plain data: it can be persisted (the [Queue] does) and
// submitted later. Create one with [NewIntent] so the key and body are
// validated.
type Intent struct {
	// Key is the idempotency key, created when the user decided.
	Key string `json:"key"`
	// Method is the HTTP method, e.g. "POST".
	Method string `json:"method"`
	// Path is the request path relative to [Config.BaseURL], starting with
	// "/"; it may carry a query string.
	Path string `json:"path"`
	// Body is the JSON request body, sent byte for byte on every attempt.
	// Nil means no body.
	Body []byte `json:"body,omitempty"`
	// Header holds extra request headers sent on every attempt, such as
	// X-Tenant-ID and X-Actor-ID.
	Header http.Header `json:"header,omitempty"`
	// CreatedAt is when the intent (and its key) was created.
	CreatedAt time.Time `json:"created_at"`
}

// IntentOpts are optional settings for [NewIntent].
type IntentOpts struct {
	// Key is the idempotency key to use instead of a new one. It must be 8–255
	// characters from '!' to '~' except '"' and '\'. Defaults to a new UUID
	// v7 (time-ordered, so keys created together sort together).
	Key string
	// Header holds extra request headers, such as X-Tenant-ID and X-Actor-ID.
	// It must not set Idempotency-Key. Defaults to none.
	Header http.Header
	// CreatedAt is recorded as the intent's creation time. Defaults to
	// time.Now().
	CreatedAt time.Time
}

// ErrInvalidIntent is returned (wrapped, naming the problem) when an intent
// cannot be sent as it is: a bad key, method, path, body or header. Nothing
// was sent.
var ErrInvalidIntent = errors.New("invalid intent")

// NewIntent creates an intent and its idempotency key now. body is encoded
// as JSON, except that a []byte or json.RawMessage is taken as already
// encoded JSON (and must be valid); a nil body means the request has none.
// opts may be nil.
func NewIntent(method, path string, body any, opts *IntentOpts) (*Intent, error) {
	if opts == nil {
		opts = &IntentOpts{}
	}

	var encoded []byte
	if body != nil {
		var err error
		if encoded, err = encodeBody(body); err != nil {
			return nil, err
		}
	}

	key := opts.Key
	if key == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("error creating idempotency key: %w", err)
		}
		key = id.String()
	}

	createdAt := opts.CreatedAt
	if createdAt.IsZero() {
		createdAt = time.Now()
	}

	intent := &Intent{
		Key:       key,
		Method:    strings.ToUpper(method),
		Path:      path,
		Body:      encoded,
		Header:    canonicalHeader(opts.Header),
		CreatedAt: createdAt.UTC(),
	}
	if err := intent.Validate(); err != nil {
		return nil, err
	}
	return intent, nil
}

// Validate reports whether the intent can be sent: the key, method, path,
// body and headers are well formed. The error wraps [ErrInvalidIntent].
func (i *Intent) Validate() error {
	if err := validateKey(i.Key); err != nil {
		return err
	}
	if i.Method == "" || strings.ContainsFunc(i.Method, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return fmt.Errorf("%w: method %q must be an upper-case HTTP method", ErrInvalidIntent, i.Method)
	}
	if !strings.HasPrefix(i.Path, "/") {
		return fmt.Errorf("%w: path %q must start with /", ErrInvalidIntent, i.Path)
	}
	if i.Body != nil && !json.Valid(i.Body) {
		return fmt.Errorf("%w: body is not valid JSON", ErrInvalidIntent)
	}
	for name := range i.Header {
		if http.CanonicalHeaderKey(name) == headerIdempotencyKey {
			return fmt.Errorf("%w: Header must not set %s; it comes from Key", ErrInvalidIntent, headerIdempotencyKey)
		}
	}
	return nil
}

// canonicalHeader copies h with canonical names, so that Get finds
// "X-Tenant-ID" however the caller spelled it.
func canonicalHeader(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for name, values := range h {
		key := http.CanonicalHeaderKey(name)
		out[key] = append(out[key], values...)
	}
	return out
}

// encodeBody encodes a non-nil body as JSON, keeping bytes already encoded (checked to be JSON).
func encodeBody(body any) ([]byte, error) {
	var encoded []byte
	switch b := body.(type) {
	case json.RawMessage:
		encoded = b
	case []byte:
		encoded = b
	default:
		var err error
		if encoded, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("%w: error encoding body: %w", ErrInvalidIntent, err)
		}
		return encoded, nil
	}
	if !json.Valid(encoded) {
		return nil, fmt.Errorf("%w: body is not valid JSON", ErrInvalidIntent)
	}
	return append([]byte(nil), encoded...), nil
}

// validateKey applies the server's key rule (internal/idemkey).
func validateKey(key string) error {
	if problem := idemkey.Problem(key); problem != "" {
		return fmt.Errorf("%w: %s", ErrInvalidIntent, problem)
	}
	return nil
}
