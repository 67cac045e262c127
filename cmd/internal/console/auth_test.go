package console_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/internal/console"
	"github.com/pgsaga/pgsaga/saga"
)

// TestUnauthenticated: every page but the login answers a browser with 303 to /login and a
// script with 401 {"error":"unauthenticated"}, and a wrong token or a forged cookie is no
// token. Nothing is read or changed.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	// Every wrong token here is a failed sign-in from one address: throttling has its own test.
	e := newEnv(t, &envOpts{maxFailedSignIns: 1000})
	_, parked := e.parkedPayment(alice)
	page := keyPath(alice, parked)

	for _, tc := range []struct {
		name   string
		method string
		path   string
	}{
		{"overview", "GET", "/"},
		{"keys", "GET", "/keys?stuck=1"},
		{"key", "GET", page},
		{"resume", "POST", page + "/resume"},
		{"settle", "POST", page + "/settle"},
		{"logout", "POST", "/logout"},
		{"river", "GET", "/river/"},
		{"river api", "GET", "/river/api/jobs?state=available"},
		{"unknown page", "GET", "/nope"},
	} {
		form := url.Values{"outcome": {"failed"}, "note": {"forged"}}
		for _, cred := range []struct {
			name string
			r    req
		}{
			{"none", req{}},
			{"wrong bearer", req{bearer: "not-the-token"}},
			{"token prefix", req{bearer: token[:len(token)-1]}},
			{"basic scheme", req{header: http.Header{"Authorization": {"Basic " + token}}}},
			{"forged cookie", req{cookie: &http.Cookie{Name: "__Host-pgsaga_console", Value: "forged"}}},
			{"plain-HTTP cookie name", req{cookie: &http.Cookie{Name: "pgsaga_console", Value: "forged"}}},
		} {
			t.Run(tc.name+"/"+cred.name, func(t *testing.T) {
				r := cred.r
				r.method, r.path, r.form = tc.method, tc.path, form
				got := e.do(r)
				require.Equal(t, http.StatusUnauthorized, got.status, string(got.body))
				require.Equal(t, "unauthenticated", got.json(t)["error"])

				r.accept = browserAccept
				got = e.do(r)
				require.Equal(t, http.StatusSeeOther, got.status)
				require.True(t, strings.HasPrefix(got.header.Get("Location"), "/login"), got.header.Get("Location"))
			})
		}
	}
	k := e.key(alice, parked)
	require.Equal(t, saga.KeyStatusParked, k.Status, "no request changed the key")
	require.Empty(t, k.History)
}

// TestLoginRedirectsBack: a browser sent to the login page from a key page comes back to it, and
// a next that leaves the console is ignored.
func TestLoginRedirectsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	r := e.do(req{path: "/keys?stuck=1", accept: browserAccept})
	require.Equal(t, http.StatusSeeOther, r.status)
	require.Equal(t, "/login?next="+url.QueryEscape("/keys?stuck=1"), r.header.Get("Location"))

	for next, want := range map[string]string{
		"/keys?stuck=1":     "/keys?stuck=1",
		"//evil.example/x":  "/",
		"https://evil.test": "/",
		"/\\evil.example":   "/",
		"":                  "/",
	} {
		r := e.do(req{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {token}, "next": {next}}})
		require.Equal(t, http.StatusSeeOther, r.status)
		require.Equal(t, want, r.header.Get("Location"), "next %q", next)
	}
}

// TestBearer: the token as a Bearer header reads every page and needs no CSRF token to act.
func TestBearer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.invoice(alice, 100)
	for _, path := range []string{"/", "/keys", "/keys?stuck=1"} {
		r := e.do(req{path: path, bearer: token})
		require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.body)
		r = e.do(req{path: path, header: http.Header{"Authorization": {"bearer  " + token}}})
		require.Equal(t, http.StatusOK, r.status, "the scheme is case-insensitive")
	}
	r := e.do(req{path: "/", bearer: token, accept: browserAccept})
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	require.Empty(t, (&http.Response{Header: r.header}).Cookies(), "a Bearer request gets no session")
}

// TestLogin: a login with the token sets an HttpOnly, SameSite=Strict, Secure session cookie
// with the __Host- prefix that authenticates the pages; a wrong token sets nothing; logout ends
// the session on the server, so the old cookie no longer works.
func TestLogin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})

	page := e.do(req{path: "/login", accept: browserAccept})
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), `name="token"`)

	for _, wrong := range []string{"", "nope", token + "x", strings.ToUpper(token)} {
		r := e.do(req{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {wrong}}})
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Empty(t, (&http.Response{Header: r.header}).Cookies())
		require.Contains(t, string(r.body), "not an operator")
		r = e.do(req{method: "POST", path: "/login", form: url.Values{"token": {wrong}}})
		require.Equal(t, http.StatusUnauthorized, r.status)
		require.Equal(t, "unauthenticated", r.json(t)["error"])
	}

	r := e.do(req{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {token}}})
	require.Equal(t, http.StatusSeeOther, r.status)
	require.Equal(t, "/", r.header.Get("Location"))
	ck := sessionCookie(t, r)
	require.Equal(t, "__Host-pgsaga_console", ck.Name)
	require.True(t, ck.Secure, "the __Host- prefix needs Secure")
	require.True(t, ck.HttpOnly)
	require.Equal(t, http.SameSiteStrictMode, ck.SameSite)
	require.Equal(t, "/", ck.Path, "the __Host- prefix needs Path=/")
	require.Empty(t, ck.Domain, "the __Host- prefix forbids a Domain")
	require.Equal(t, 12*3600, ck.MaxAge)
	require.GreaterOrEqual(t, len(ck.Value), 43, "256 random bits")
	require.NotContains(t, ck.Value, token)
	require.Regexp(t, `^__Host-pgsaga_console=[A-Za-z0-9_-]{43}; Path=/; Max-Age=43200; HttpOnly; Secure; SameSite=Strict$`,
		r.header.Get("Set-Cookie"))

	home := e.do(req{path: "/", accept: browserAccept, cookie: ck})
	require.Equal(t, http.StatusOK, home.status)
	require.Contains(t, string(home.body), "Log out")
	js := e.do(req{path: "/", cookie: ck})
	require.Equal(t, http.StatusOK, js.status)
	require.Contains(t, js.json(t), "counts")

	// A script may log in too, and gets the CSRF token its posts need.
	r = e.do(req{method: "POST", path: "/login", form: url.Values{"token": {token}}})
	require.Equal(t, http.StatusOK, r.status)
	require.NotEmpty(t, r.json(t)["csrf_token"])

	csrf := csrfOf(t, home.body)
	out := e.do(req{method: "POST", path: "/logout", accept: browserAccept, cookie: ck})
	require.Equal(t, http.StatusForbidden, out.status, "logout is a form of the session: it needs the CSRF token")
	out = e.do(req{method: "POST", path: "/logout", accept: browserAccept, cookie: ck, form: url.Values{"csrf": {csrf}}})
	require.Equal(t, http.StatusSeeOther, out.status)
	require.Equal(t, "/login", out.header.Get("Location"))
	cleared := sessionCookie(t, out)
	require.Equal(t, -1, cleared.MaxAge)

	after := e.do(req{path: "/", accept: browserAccept, cookie: ck})
	require.Equal(t, http.StatusSeeOther, after.status, "the session ended on the server")
	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/", cookie: ck}).status)
}

// TestCSRF: a cookie session's post without the session's CSRF token, or with another one, is
// 403 and changes nothing; with it, the action runs. A session's token does not work for
// another session.
func TestCSRF(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	_, parked := e.parkedPayment(alice)
	_, stuck := e.stuckPayment(alice)
	ck, csrf := e.login()
	other, otherCSRF := e.login()
	require.NotEqual(t, csrf, otherCSRF)
	settle := url.Values{"outcome": {"failed"}, "note": {"checked the provider: no charge"}}

	for _, tc := range []struct {
		name string
		csrf []string
		hdr  string
	}{
		{"missing", nil, ""},
		{"empty", []string{""}, ""},
		{"wrong", []string{"AAAA" + csrf[4:]}, ""},
		{"another session's", []string{otherCSRF}, ""},
		{"wrong header", nil, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{keyPath(alice, parked) + "/settle", keyPath(alice, parked) + "/resume", keyPath(alice, stuck) + "/resume"} {
				form := url.Values{}
				for k, v := range settle {
					form[k] = v
				}
				if tc.csrf != nil {
					form["csrf"] = tc.csrf
				}
				hdr := http.Header{}
				if tc.hdr != "" {
					hdr.Set("X-CSRF-Token", tc.hdr)
				}
				for _, accept := range []string{browserAccept, "application/json"} {
					r := e.do(req{method: "POST", path: path, cookie: ck, form: form, accept: accept, header: hdr})
					require.Equal(t, http.StatusForbidden, r.status, "%s %s", path, r.body)
				}
				r := e.do(req{method: "POST", path: path, cookie: ck, form: form})
				require.Equal(t, "csrf_token_invalid", r.json(t)["error"])
			}
		})
	}
	k := e.key(alice, parked)
	require.Equal(t, saga.KeyStatusParked, k.Status, "nothing changed")
	require.Empty(t, k.History)
	require.Equal(t, 1, e.key(alice, stuck).Attempts, "nothing resumed")
	require.Equal(t, 1, e.sim.TotalCharges())

	// The session's own token, in the form or the header, lets the post through.
	form := url.Values{"csrf": {otherCSRF}, "outcome": {"failed"}, "note": {"checked the provider: no charge"}}
	r := e.do(req{method: "POST", path: keyPath(alice, parked) + "/settle", cookie: other, form: form})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	r = e.do(req{method: "POST", path: keyPath(alice, stuck) + "/resume", cookie: ck, header: http.Header{"X-Csrf-Token": {csrf}}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
}

// TestSessionsExpire: a session ends after its TTL and after SessionIdle without a request, and
// the oldest is ended when there are too many.
func TestSessionsExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c, err := console.New(&console.Config{Client: e.client, Token: token, SessionTTL: 2 * time.Hour, SessionIdle: time.Hour,
		MaxSessions: 2, Now: clock})
	require.NoError(t, err)
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	e.console = srv

	first, _ := e.login()
	second, _ := e.login()
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: first}).status)
	third, _ := e.login()
	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/", cookie: first}).status, "the oldest of three sessions ended")
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: second}).status)

	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	// Idle: a session with no request for an hour is over; one in use goes on.
	for range 2 {
		advance(40 * time.Minute)
		require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: third}).status, "a request every 40 minutes keeps it")
	}
	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/", cookie: second}).status, "80 minutes without a request: over")
	// Lifetime: two hours after the login it is over, however busy.
	advance(39 * time.Minute)
	require.Equal(t, http.StatusOK, e.do(req{path: "/", cookie: third}).status)
	advance(time.Minute)
	require.Equal(t, http.StatusUnauthorized, e.do(req{path: "/", cookie: third}).status, "SessionTTL after the login the session is over")
}

// TestConfigRefusesNoOperator: a console nobody can sign in to, or with a token shorter than 32
// bytes, is refused.
func TestConfigRefusesNoOperator(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	_, err := console.New(&console.Config{Client: e.client})
	require.ErrorContains(t, err, "Config.Operators or Config.Token is required")
	_, err = console.New(&console.Config{Client: e.client, Token: token[:31]})
	require.ErrorContains(t, err, "Config.Token must be at least 32 bytes, got 31")
	_, err = console.New(&console.Config{Client: e.client, Token: token, TokenOperator: "two words"})
	require.ErrorContains(t, err, "TokenOperator")
	_, err = console.New(&console.Config{Token: token})
	require.ErrorContains(t, err, "Client is required")
}
