package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecurityHeaders: every answer, authenticated or not, page or JSON, carries the headers;
// the console's pages get the strict policy and hold no script and no inline style, riverui
// gets its own policy under /river/ only.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	_, parked := e.parkedPayment(alice)
	ck, _ := e.login()

	strict := "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
	for _, r := range []req{
		{path: "/login", accept: browserAccept},
		{path: "/", accept: browserAccept},
		{path: "/", accept: browserAccept, cookie: ck},
		{path: "/", bearer: token},
		{path: "/keys?stuck=1", accept: browserAccept, cookie: ck},
		{path: keyPath(alice, parked), accept: browserAccept, cookie: ck},
		{path: "/keys?state=bogus", accept: browserAccept, cookie: ck},
		{path: "/nope", accept: browserAccept, cookie: ck},
		{path: "/static/console.css"},
		{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {"wrong"}}},
	} {
		got := e.do(r)
		h := got.header
		require.Equal(t, strict, h.Get("Content-Security-Policy"), r.path)
		require.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), r.path)
		require.Equal(t, "same-origin", h.Get("Referrer-Policy"), r.path)
		require.Equal(t, "DENY", h.Get("X-Frame-Options"), r.path)
		if !strings.HasPrefix(r.path, "/static/") {
			require.Equal(t, "no-store", h.Get("Cache-Control"), r.path)
		}
		if strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			html := string(got.body)
			require.NotContains(t, html, "<script", r.path)
			require.NotContains(t, html, "<style", r.path)
			require.NotRegexp(t, regexp.MustCompile(`\sstyle=`), html, r.path)
			require.NotRegexp(t, regexp.MustCompile(`\son[a-z]+=`), html, r.path)
		}
	}
	css := e.do(req{path: "/static/console.css"})
	require.Equal(t, http.StatusOK, css.status)
	require.Equal(t, "text/css; charset=utf-8", css.header.Get("Content-Type"))
	require.Equal(t, http.StatusNotFound, e.do(req{path: "/static/"}).status, "no directory listing")

	river := e.do(req{path: "/river/", accept: browserAccept, cookie: ck})
	require.Equal(t, http.StatusOK, river.status)
	csp := river.header.Get("Content-Security-Policy")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.Contains(t, csp, "default-src 'self'")
	require.NotContains(t, csp, "unsafe-eval")
	require.NotContains(t, csp, "script-src", "riverui's scripts come from 'self' only")
	require.Equal(t, "nosniff", river.header.Get("X-Content-Type-Options"))
}

// TestRiverUI: riverui is served under /river/ behind the console's authentication: its page
// and its API answer a session or a Bearer token, and a cross-site state-changing request
// carrying the session cookie is refused.
func TestRiverUI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ck, _ := e.login()

	page := e.do(req{path: "/river/", accept: browserAccept, cookie: ck})
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, string(page.body), `<div id="root"`)
	require.Regexp(t, `src="/river/assets/[^"]+\.js"`, string(page.body))
	asset := regexpFind(t, `src="(/river/assets/[^"]+\.js)"`, string(page.body))
	require.Equal(t, http.StatusOK, e.do(req{path: asset, cookie: ck, accept: "*/*"}).status)

	redirect := e.do(req{path: "/river", accept: browserAccept, cookie: ck})
	require.Equal(t, http.StatusMovedPermanently, redirect.status)
	require.Equal(t, "/river/", redirect.header.Get("Location"))

	for _, r := range []req{{cookie: ck}, {bearer: token}} {
		r.path = "/river/api/jobs?state=available&limit=5"
		got := e.do(r)
		require.Equal(t, http.StatusOK, got.status, string(got.body))
		require.Contains(t, decode(t, got.body), "data")
	}

	cross := e.do(req{method: "POST", path: "/river/api/queues/default/pause", cookie: ck,
		header: http.Header{"Sec-Fetch-Site": {"cross-site"}, "Content-Type": {"application/json"}}})
	require.Equal(t, http.StatusForbidden, cross.status, string(cross.body))
}
