package saga

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pgsaga/pgsaga/internal/problem"
)

// HandlerOpts configure an HTTP handler for one operation.
type HandlerOpts struct {
	// Scope authenticates the request. Required.
	Scope ScopeFunc
	// MaxBodyBytes caps the request body; a larger one answers 413. Defaults to 1 MiB.
	MaxBodyBytes int64
}

// Error codes answered by the handler, stable for clients. Those exported are the ones an
// application's own handlers answer with too; the engine alone answers the others.
const (
	CodeUnauthenticated        = "unauthenticated"
	CodeRequestTooLarge        = "request_too_large"
	CodeInvalidJSON            = "invalid_json"
	CodeInvalidRequest         = "invalid_request"
	CodeKeyReused              = "idempotency_key_reused"
	CodeTemporarilyUnavailable = "temporarily_unavailable"
	CodeOperationParked        = "operation_parked"
	CodeInternal               = "internal_error"

	codeKeyMissing        = "idempotency_key_missing"
	codeKeyInvalid        = "idempotency_key_invalid"
	codeRequestInProgress = "request_in_progress"
	codeKeyExpired        = "idempotency_key_expired"
	codeConflict          = "conflict" // a unique or exclusion constraint refused the effect
)

// HeaderReplayed marks a replayed response.
const HeaderReplayed = "Idempotent-Replayed"

// errInvalidJSON is returned for a body that is not JSON.
var errInvalidJSON = errors.New("request body is not valid JSON")

// Handler serves an operation over HTTP with the IETF Idempotency-Key semantics. Checks run in
// this order, the first failing one answering: authentication (401), key present and well
// formed (400), body size (413), body is JSON (400 invalid_json), the key against a stored
// request (422, replay with Idempotent-Replayed: true, 409 with Retry-After), validation (400
// invalid_request), the effect. Nothing is stored for any of the refusals, nor for a transient
// failure (503 temporarily_unavailable); a parked key answers 503 operation_parked.
//
// Mounted on a ServeMux pattern with wildcards ("POST /orders/{id}/ship"), the handler keeps
// their values with the key (Request.PathValues): steps read them with phases.Run.PathValue,
// also when the worker resumes the key.
func (c *Client) Handler(operation string, opts *HandlerOpts) (http.Handler, error) {
	if _, err := c.operation(operation); err != nil {
		return nil, err
	}
	if opts == nil || opts.Scope == nil {
		return nil, errors.New("saga: HandlerOpts.Scope is required")
	}
	o := *opts
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 1 << 20
	}
	return &handler{c: c, operation: operation, opts: &o}, nil
}

type handler struct {
	c         *Client
	operation string
	opts      *HandlerOpts
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scope, refused, ok := authenticate(w, r, h.opts.Scope, "retry with the same Idempotency-Key")
	if !ok {
		h.c.observer.Request(h.operation, refused)
		return
	}
	key, err := parseKeyHeader(r.Header.Values("Idempotency-Key"))
	if errors.Is(err, errKeyMissing) {
		h.reject(w, http.StatusBadRequest, codeKeyMissing, err.Error())
		return
	} else if err != nil {
		h.reject(w, http.StatusBadRequest, codeKeyInvalid, err.Error())
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.reject(w, http.StatusRequestEntityTooLarge, CodeRequestTooLarge, fmt.Sprintf("the request body is larger than %d bytes", h.opts.MaxBodyBytes))
			return
		}
		h.reject(w, http.StatusBadRequest, CodeInvalidJSON, "error reading the request body")
		return
	}
	if len(body) == 0 {
		body = []byte("{}") // a POST without a body means "no parameters"
	}
	if !json.Valid(body) {
		h.reject(w, http.StatusBadRequest, CodeInvalidJSON, errInvalidJSON.Error())
		return
	}

	res, err := h.c.Run(r.Context(), h.operation, &Request{Scope: scope, Key: key, Method: r.Method, Path: requestPath(r), Body: body,
		PathValues: pathValues(r)})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	header := w.Header()
	for name, values := range res.Response.Header {
		header[http.CanonicalHeaderKey(name)] = values
	}
	if res.Replayed {
		header.Set(HeaderReplayed, "true")
	}
	w.WriteHeader(res.Response.Status)
	_, _ = w.Write(res.Response.Body)
}

func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	a := answerError(err)
	if a.outcome == outcomeError {
		h.c.cfg.Logger.ErrorContext(r.Context(), "request failed", "operation", h.operation, "error", err)
	}
	if a.retryAfter > 0 {
		w.Header().Set("Retry-After", retryAfter(a.retryAfter))
	}
	WriteError(w, a.status, a.code, a.message)
}

// retryAfter is a Retry-After value: whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(int(math.Ceil(d.Seconds())), 1))
}

func (h *handler) reject(w http.ResponseWriter, status int, code, message string) {
	h.c.observer.Request(h.operation, outcomeRejected)
	WriteError(w, status, code, message)
}

// WriteError answers an error as problem details (see ProblemBody), the shape of every error
// pgsaga answers and stores, for handlers that sit beside pgsaga's.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", problem.ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(status, code, message))
}
