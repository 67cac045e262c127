package saga_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

// A route beside the operations is authenticated as they are: its function runs only with a
// scope; a refusal is 401, an authentication that cannot answer now 503 with Retry-After.
func TestAuthenticated(t *testing.T) {
	t.Parallel()
	down := false
	scope := func(r *http.Request) (saga.Scope, error) {
		if down {
			return saga.Scope{}, &saga.TransientError{Err: errors.New("the key store is down"), RetryAfter: 2500 * time.Millisecond}
		}
		return saga.HeaderScope(r)
	}
	h := saga.Authenticated(scope, func(w http.ResponseWriter, _ *http.Request, s saga.Scope) {
		_, _ = w.Write([]byte(s.Tenant + "/" + s.Actor))
	})
	get := func(tenant, actor string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/x", nil)
		if tenant != "" {
			r.Header.Set("X-Tenant-ID", tenant)
		}
		if actor != "" {
			r.Header.Set("X-Actor-ID", actor)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	ok := get("t1", "ålice")
	require.Equal(t, http.StatusOK, ok.Code)
	require.Equal(t, "t1/ålice", ok.Body.String())

	for _, bad := range [][2]string{{"t1", ""}, {"", "a"}, {strings.Repeat("t", 65), "a"}, {"t1", "\xff"}} {
		w := get(bad[0], bad[1])
		require.Equal(t, http.StatusUnauthorized, w.Code, "%q", bad)
		require.Contains(t, w.Body.String(), `"error":"unauthenticated"`)
	}
	require.Equal(t, http.StatusOK, get(strings.Repeat("é", 64), "a").Code, "64 characters, not bytes")

	down = true
	w := get("t1", "a")
	require.Equal(t, http.StatusServiceUnavailable, w.Code)
	require.Equal(t, "3", w.Header().Get("Retry-After"))
	require.Contains(t, w.Body.String(), `"error":"temporarily_unavailable"`)
}
