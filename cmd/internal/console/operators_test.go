package console_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/operator"
)

// TestNamedOperators: each operator signs in with their own token, by form or Bearer; what they
// do is recorded under their name; a login form that names someone else fails.
func TestNamedOperators(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	ana, ben := e.addOperator("ana"), e.addOperator("ben")
	_, first := e.parkedPayment(alice)
	_, second := e.stuckPayment(alice)

	anaCookie, anaCSRF := e.loginWith(ana)
	home := e.do(req{path: "/", accept: browserAccept, cookie: anaCookie})
	require.Contains(t, string(home.body), `signed in as <strong>ana</strong>`)
	r := e.do(req{method: "POST", path: keyPath(alice, first) + "/settle", cookie: anaCookie,
		form: url.Values{"csrf": {anaCSRF}, "outcome": {"failed"}, "note": {"no charge at the provider"}}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do(req{method: "POST", path: keyPath(alice, second) + "/resume", bearer: ben})
	require.Equal(t, http.StatusOK, r.status, string(r.body))

	require.Equal(t, "ana", e.key(alice, first).History[0].By)
	require.Equal(t, "ben", e.key(alice, second).History[0].By)

	r = e.do(req{method: "POST", path: "/login", form: url.Values{"token": {ben}}})
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "ben", r.json(t)["operator"])
	r = e.do(req{method: "POST", path: "/login", form: url.Values{"token": {ben}, "operator": {"ben"}}})
	require.Equal(t, http.StatusOK, r.status, "naming the token's operator")
	for _, named := range []string{"ana", "admin", "nobody", "ben smith"} {
		r = e.do(req{method: "POST", path: "/login", form: url.Values{"token": {ben}, "operator": {named}}})
		require.Equal(t, http.StatusUnauthorized, r.status, "ben's token naming %q", named)
	}
	r = e.do(req{method: "POST", path: "/login", form: url.Values{"token": {token}}})
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, tokenOperator, r.json(t)["operator"], "Config.Token's operator")
}

// TestRevokeEndsSessions: revoking an operator ends their sessions and refuses their token at
// once; other operators are untouched.
func TestRevokeEndsSessions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	ana, ben := e.addOperator("ana"), e.addOperator("ben")
	anaCookie, _ := e.loginWith(ana)
	benCookie, _ := e.loginWith(ben)
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: anaCookie}).status)
	require.Equal(t, http.StatusOK, e.do(req{path: "/", bearer: ana}).status)

	_, err := operator.NewStore(e.db.Pool).Revoke(t.Context(), "ana")
	require.NoError(t, err)

	r := e.do(req{path: "/", cookie: anaCookie, accept: browserAccept})
	require.Equal(t, http.StatusSeeOther, r.status, "the session ended with the revoke")
	require.Equal(t, "/login", r.header.Get("Location"))
	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/", bearer: ana}).status)
	require.Equal(t, http.StatusUnauthorized, e.do(req{method: "POST", path: "/login", form: url.Values{"token": {ana}}}).status)
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: benCookie}).status, "ben is still in")
}

// TestSignInThrottle: 20 wrong sign-ins in a row from one address: the first 10 are 401, the
// next 10 are 429 too_many_attempts with Retry-After, and each is logged with the address. While
// the address is throttled a right token is refused too, by form or Bearer, and sessions already
// open go on; once the window has passed, sign-ins are evaluated again.
func TestSignInThrottle(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		now  = time.Now()
		logs = &syncBuffer{}
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, &envOpts{noRiver: true, logs: logs, now: clock})
	ana := e.addOperator("ana")
	open, _ := e.loginWith(ana)

	statuses := map[int]int{}
	for i := range 20 {
		var r *reply
		if i%2 == 0 {
			r = e.do(req{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {"pgso_wrong"}}})
		} else {
			r = e.do(req{path: "/", bearer: "pgso_wrong"})
		}
		statuses[r.status]++
		if i < 10 {
			require.Equal(t, http.StatusUnauthorized, r.status, "attempt %d", i+1)
			continue
		}
		require.Equal(t, http.StatusTooManyRequests, r.status, "attempt %d", i+1)
		require.Equal(t, "60", r.header.Get("Retry-After"))
		if i%2 == 0 {
			require.Contains(t, string(r.body), "Too many failed sign-ins", "the login page says why")
		} else {
			require.Equal(t, "too_many_attempts", r.json(t)["error"])
		}
	}
	require.Equal(t, map[int]int{http.StatusUnauthorized: 10, http.StatusTooManyRequests: 10}, statuses)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	var failed, refused int
	for _, l := range lines {
		switch {
		case strings.Contains(l, `msg="authentication refused" surface=console reason=unknown_token`):
			failed++
			require.Contains(t, l, "client=127.0.0.1")
		case strings.Contains(l, `msg="authentication refused" surface=console reason=too_many_attempts`):
			refused++
			require.Contains(t, l, "client=127.0.0.1")
		}
	}
	require.Equal(t, 10, failed, logs.String())
	require.Equal(t, 10, refused, logs.String())

	r := e.do(req{method: "POST", path: "/login", form: url.Values{"token": {ana}}})
	require.Equal(t, http.StatusTooManyRequests, r.status, "a right token is refused too while throttled")
	require.Empty(t, (&http.Response{Header: r.header}).Cookies())
	require.Equal(t, http.StatusTooManyRequests, e.do(req{path: "/", bearer: ana}).status)
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: open}).status, "an open session is no sign-in")

	mu.Lock()
	now = now.Add(59 * time.Second)
	mu.Unlock()
	r = e.do(req{path: "/", bearer: ana})
	require.Equal(t, http.StatusTooManyRequests, r.status)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	require.Equal(t, http.StatusOK, e.do(req{path: "/", bearer: ana}).status, "a minute after the failures")
	require.Equal(t, http.StatusOK, e.do(req{method: "POST", path: "/login", form: url.Values{"token": {ana}}}).status)
}

// TestSignInThrottleByName: failures naming one operator, from ever-new addresses, lock that
// name with a growing delay; a sign-in that names nobody is not held up by it, and the lock
// is per name.
func TestSignInThrottleByName(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		now = time.Now()
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	e := newEnv(t, &envOpts{noRiver: true, now: clock})
	ana := e.addOperator("ana")
	e.addOperator("ben")

	n := 0
	login := func(tok, name string) *httptest.ResponseRecorder {
		n++
		form := url.Values{"token": {tok}}
		if name != "" {
			form.Set("operator", name)
		}
		r := httptest.NewRequest("POST", "/login", strings.NewReader(form.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = "192.0.2." + itoa(n%250+1) + ":40000" // a new address each time
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, r)
		return rec
	}
	for i := range 5 {
		require.Equal(t, http.StatusUnauthorized, login("pgso_wrong", "ana").Code, "failure %d is free", i+1)
	}
	// From the sixth failure on, each locks the name: 1s, then 2s, then 4s.
	for _, lock := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		require.Equal(t, http.StatusUnauthorized, login("pgso_wrong", "ana").Code)
		rec := login(ana, "ana")
		require.Equal(t, http.StatusTooManyRequests, rec.Code, "locked for %s, a right token included", lock)
		require.Equal(t, itoa(int(lock.Seconds())), rec.Header().Get("Retry-After"))
		require.Equal(t, http.StatusOK, login(ana, "").Code, "naming nobody, ana still gets in")
		require.Equal(t, http.StatusUnauthorized, login("pgso_wrong", "ben").Code, "another name is not locked")
		advance(lock)
	}
	require.Equal(t, http.StatusOK, login(ana, "ana").Code, "after the lock, a right sign-in clears the name")
	require.Equal(t, http.StatusUnauthorized, login("pgso_wrong", "ana").Code)
	require.Equal(t, http.StatusOK, login(ana, "ana").Code, "the count starts again")
}

// TestInsecureHTTPCookie: with InsecureHTTP the cookie is neither Secure nor __Host- prefixed
// (a browser would drop it over plain HTTP), and that name is the one read back.
func TestInsecureHTTPCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true, insecureHTTP: true})
	r := e.do(req{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {token}}})
	require.Equal(t, http.StatusSeeOther, r.status)
	ck := sessionCookie(t, r)
	require.Equal(t, "pgsaga_console", ck.Name)
	require.False(t, ck.Secure)
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: ck}).status)
	ck.Name = "__Host-pgsaga_console"
	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/", cookie: ck}).status)
}

// TestOperatorsUnavailable: when the operators cannot be read, a sign-in is 503, never a way in.
func TestOperatorsUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	ana := e.addOperator("ana")
	anaCookie, _ := e.loginWith(ana)
	e.db.Pool.Close()
	for _, r := range []req{{path: "/", bearer: ana}, {path: "/", cookie: anaCookie}, {method: "POST", path: "/login", form: url.Values{"token": {ana}}}} {
		got := e.do(r)
		require.Equal(t, http.StatusServiceUnavailable, got.status, string(got.body))
		require.Equal(t, "temporarily_unavailable", got.json(t)["error"])
	}
}

// TestPagesUnavailable: a session that needs no database to check (the shared token's) meets a
// database that went away on its page reads: 503 with Retry-After, as the API answers, not 500.
func TestPagesUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	cookie, _ := e.login()
	e.db.Pool.Close()
	for _, path := range []string{"/", "/keys", "/charges/unmatched"} {
		got := e.do(req{path: path, cookie: cookie})
		require.Equal(t, http.StatusServiceUnavailable, got.status, "%s: %s", path, got.body)
		require.Equal(t, "temporarily_unavailable", got.json(t)["error"], path)
		require.Equal(t, "1", got.header.Get("Retry-After"), path)
	}
}

// syncBuffer is a log the console writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSignInNeverLogsATokenTypedAsTheName: a login form whose name field holds a token (typed
// into the wrong field) fails, and the log keeps neither that text nor any name that is no
// operator's; a failure naming a real operator is logged with the name.
func TestSignInNeverLogsATokenTypedAsTheName(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	e := newEnv(t, &envOpts{noRiver: true, logs: logs})
	ana := e.addOperator("ana")
	for _, named := range []string{ana, "nobody"} {
		r := e.do(req{method: "POST", path: "/login", form: url.Values{"token": {"pgso_wrong"}, "operator": {named}}})
		require.Equal(t, http.StatusUnauthorized, r.status)
	}
	r := e.do(req{method: "POST", path: "/login", form: url.Values{"token": {"pgso_wrong"}, "operator": {"ana"}}})
	require.Equal(t, http.StatusUnauthorized, r.status)

	require.Equal(t, 3, strings.Count(logs.String(), `reason=unknown_token`), logs.String())
	require.NotContains(t, logs.String(), ana, "the token typed as the name")
	require.NotContains(t, logs.String(), "nobody")
	require.Equal(t, 1, strings.Count(logs.String(), "operator=ana"), logs.String())
}
