package saga_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

// The scope is the handler's first check: a refused one answers 401 and a scope that cannot be
// checked now (a *TransientError) 503 with Retry-After, before the key or the body is looked at,
// and neither stores anything.
func TestHandlerScopeErrors(t *testing.T) {
	t.Parallel()
	c, db := newClient(t, singleTx("thing", func() error { return nil }))
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{"refused", errors.New("no such API key"), http.StatusUnauthorized, saga.CodeUnauthenticated, ""},
		{"unavailable", &saga.TransientError{Err: errors.New("connection refused"), RetryAfter: 1500 * time.Millisecond},
			http.StatusServiceUnavailable, saga.CodeTemporarilyUnavailable, "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := c.Handler("thing", &saga.HandlerOpts{Scope: func(*http.Request) (saga.Scope, error) { return saga.Scope{}, tc.err }})
			require.NoError(t, err)
			key := uuid.NewString()
			// Neither a key header nor a JSON body: authentication answers first all the same.
			req := httptest.NewRequest("POST", "/things", strings.NewReader("not json"))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			require.Contains(t, rec.Body.String(), `"error":"`+tc.code+`"`)
			require.Equal(t, tc.retryAfter, rec.Header().Get("Retry-After"))

			req = httptest.NewRequest("POST", "/things", strings.NewReader(`{"n":1}`))
			req.Header.Set("Idempotency-Key", key)
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			require.Equal(t, tc.status, rec.Code, rec.Body.String())
			require.Equal(t, 0, countEffects(t, db, key))
			var n int
			require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*) FROM pgsaga_key WHERE key = $1`, key).Scan(&n))
			require.Zero(t, n, "nothing stored")
		})
	}
}
