package saga_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// pathReader is an operation whose every step reads the route's wildcards: the first phase, a
// call that fails once (so that a resume finishes the key), and the phase that answers them.
type pathReader struct {
	mu     sync.Mutex
	failed bool
	seen   map[string][]string // step → "shop/order/rest" as each execution of it read them
}

func (p *pathReader) read(step string, run *phases.Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[step] = append(p.seen[step], run.PathValue("shop")+"/"+run.PathValue("order")+"/"+run.PathValue("rest"))
}

func (p *pathReader) operation() *phases.Operation {
	return &phases.Operation{Name: "ship", Steps: []phases.Step{
		phases.Atomic("checked", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
			p.read("checked", run)
			return nil
		}),
		phases.Call("sent", func(_ context.Context, run *phases.Run) error {
			p.read("sent", run)
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.failed {
				p.failed = true
				run.RecordCall(phases.CallOutcomeFailedBefore, "")
				return phases.RetryAfter(0, errors.New("the provider is unreachable"))
			}
			return nil
		}),
		phases.Atomic("answered", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
			p.read("answered", run)
			return run.Respond(http.StatusOK, map[string]string{"order": run.PathValue("order"), "unknown": run.PathValue("nope")})
		}),
	}}
}

func post(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(`{}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

var fixedScope = &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) {
	return saga.Scope{Tenant: "t1", Actor: "a1"}, nil
}}

// The handler reads the wildcards of the route's pattern: every step sees their values, also when
// the worker resumes the key, which has no HTTP request.
func TestPathValuesSurviveAResume(t *testing.T) {
	t.Parallel()
	p := &pathReader{seen: map[string][]string{}}
	c, _ := newClient(t, p.operation())
	h, err := c.Handler("ship", fixedScope)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /shops/{shop}/orders/{order}/ship/{rest...}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	key := uuid.NewString()
	status, _ := post(t, srv.URL+"/shops/north%2Fside/orders/ord_1/ship/by/air", key)
	require.Equal(t, http.StatusServiceUnavailable, status, "the call failed: the key waits for its next attempt")

	res, err := c.Resume(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key, &saga.ResumeOpts{Due: true})
	require.NoError(t, err)
	require.True(t, res.Resumed)
	require.JSONEq(t, `{"order":"ord_1","unknown":""}`, string(res.Response.Body))
	want := "north/side/ord_1/by/air" // values as the mux decodes them
	require.Equal(t, map[string][]string{"checked": {want}, "sent": {want, want}, "answered": {want}}, p.seen)
}

// A wildcard's value the key table cannot store (a NUL, invalid UTF-8) reaches the steps in its
// escaped form, which names no row: the operation answers it like any unknown id, and stores it.
func TestUnstorablePathValuesAreEscaped(t *testing.T) {
	t.Parallel()
	p := &pathReader{seen: map[string][]string{}, failed: true}
	c, _ := newClient(t, p.operation())
	h, err := c.Handler("ship", fixedScope)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /shops/{shop}/orders/{order}/ship/{rest...}", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	status, body := post(t, srv.URL+"/shops/n%00rth/orders/%ff%c3%a9/ship/ok", uuid.NewString())
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"order":"%FF%C3%A9","unknown":""}`, body)
	require.Equal(t, []string{"n%00rth/%FF%C3%A9/ok"}, p.seen["answered"])
}

// A handler mounted without a pattern (or called without one) has no path values: PathValue
// returns "".
func TestPathValueWithoutAPattern(t *testing.T) {
	t.Parallel()
	p := &pathReader{seen: map[string][]string{}, failed: true}
	c, _ := newClient(t, p.operation())
	h, err := c.Handler("ship", fixedScope)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	status, body := post(t, srv.URL+"/shops/north/orders/ord_1/ship", uuid.NewString())
	require.Equal(t, http.StatusOK, status, body)
	require.JSONEq(t, `{"order":"","unknown":""}`, body)
}

// A request run without HTTP gives its path values itself; they are kept with the key like the
// handler's. Values the database cannot store are refused before anything is sent.
func TestPathValuesOfARequest(t *testing.T) {
	t.Parallel()
	p := &pathReader{seen: map[string][]string{}, failed: true}
	c, _ := newClient(t, p.operation())
	req := request(uuid.NewString())
	req.PathValues = map[string]string{"order": "ord_2"}
	res, err := c.Run(t.Context(), "ship", req)
	require.NoError(t, err)
	require.JSONEq(t, `{"order":"ord_2","unknown":""}`, string(res.Response.Body))

	bad := request(uuid.NewString())
	bad.PathValues = map[string]string{"order": "ord\x003"}
	_, err = c.Run(t.Context(), "ship", bad)
	require.ErrorContains(t, err, "PathValues")
}
