package console_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/internal/console"
	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/operator"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

func TestMain(m *testing.M) {
	dbtest.Main(m, &dbtest.Opts{Migrate: dbtest.MigrateWith(payments.Migrations())})
}

// token is the operator token of the console's configuration (Config.Token) in every test,
// recorded as tokenOperator.
const (
	token         = "console-test-token-4f1c9a-0123456789abcdef"
	tokenOperator = "admin"
)

// env is one test's world: its own database, the payments service on an in-process simulator
// (to make real keys), and the console on a real HTTP server.
type env struct {
	t       testing.TB
	db      *dbtest.DB
	cfg     *console.Config
	sim     *sim.Simulator
	svc     *payments.Service
	client  *saga.Client
	api     *httptest.Server
	handler http.Handler
	console *httptest.Server
	http    *http.Client
}

type envOpts struct {
	// pageSize is the console's page size (0: its default, 50).
	pageSize int
	// noRiver leaves riverui out.
	noRiver bool
	// logs receives the console's log (default: discarded).
	logs io.Writer
	// now is the console's clock (default: time.Now).
	now func() time.Time
	// maxFailedSignIns is the console's limit (0: its default, 10).
	maxFailedSignIns int
	// insecureHTTP sets Config.InsecureHTTP.
	insecureHTTP bool
}

func newEnv(t testing.TB, o *envOpts) *env {
	t.Helper()
	if o == nil {
		o = &envOpts{}
	}
	db := dbtest.NewDB(t)
	s := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: s.Gateway(), GatewayRetries: 1})
	require.NoError(t, err)
	h, err := svc.Handler(saga.HeaderScope)
	require.NoError(t, err)
	api := httptest.NewServer(h)
	t.Cleanup(api.Close)

	logger := slog.New(slog.DiscardHandler)
	if o.logs != nil {
		logger = slog.New(slog.NewTextHandler(o.logs, nil))
	}
	cfg := &console.Config{Client: svc.Client(), Operators: operator.NewStore(db.Pool), Token: token, PageSize: o.pageSize,
		Logger: logger, Now: o.now, MaxFailedSignIns: o.maxFailedSignIns, InsecureHTTP: o.insecureHTTP}
	if !o.noRiver {
		cfg.River, err = worker.NewInsertOnlyClient(db.Pool)
		require.NoError(t, err)
	}
	c, err := console.New(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return &env{t: t, db: db, cfg: cfg, sim: s, svc: svc, client: svc.Client(), api: api, handler: c, console: srv,
		http: &http.Client{
			Timeout: 30 * time.Second,
			// The tests look at each redirect themselves.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
}

// who owns the keys the tests make.
type who struct{ tenant, actor string }

var alice = who{"tenant-1", "alice"}

func (w who) scope() saga.Scope { return saga.Scope{Tenant: w.tenant, Actor: w.actor} }

// apiPost sends a request to the payments API.
func (e *env) apiPost(as who, path, key, body string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.api.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("X-Tenant-ID", as.tenant)
	req.Header.Set("X-Actor-ID", as.actor)
	req.Header.Set("Idempotency-Key", key)
	resp, err := e.http.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, b
}

func (e *env) apiGet(as who, path string) map[string]any {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.api.URL+path, nil)
	require.NoError(e.t, err)
	req.Header.Set("X-Tenant-ID", as.tenant)
	req.Header.Set("X-Actor-ID", as.actor)
	resp, err := e.http.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode)
	var v map[string]any
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func newKey() string { return "key-" + uuid.NewString() }

// invoice creates an invoice (a completed single-transaction key) and returns its id and key.
func (e *env) invoice(as who, amount int) (id, key string) {
	e.t.Helper()
	key = newKey()
	status, body := e.apiPost(as, "/invoices", key, `{"amount": `+itoa(amount)+`, "currency": "USD"}`)
	require.Equal(e.t, http.StatusCreated, status, string(body))
	return decode(e.t, body)["id"].(string), key
}

// payment pays an invoice and requires the answer's status.
func (e *env) payment(as who, invoice string, amount, want int) (key string, body map[string]any) {
	e.t.Helper()
	key = newKey()
	status, b := e.apiPost(as, "/payments", key, paymentBody(invoice, amount))
	require.Equal(e.t, want, status, string(b))
	return key, decode(e.t, b)
}

func paymentBody(invoice string, amount int) string {
	return `{"invoice_id": "` + invoice + `", "amount": ` + itoa(amount) + `}`
}

// stuckPayment leaves a payment started with no lease: the gateway refused every charge, so the
// request answered 503 and nothing resumed it yet.
func (e *env) stuckPayment(as who) (invoice, key string) {
	e.t.Helper()
	invoice, _ = e.invoice(as, 5000)
	e.sim.FailNext(100)
	key, _ = e.payment(as, invoice, 2000, http.StatusServiceUnavailable)
	e.sim.FailNext(0)
	k := e.key(as, key)
	require.Equal(e.t, saga.KeyStatusStarted, k.Status)
	require.True(e.t, k.Stuck(), "a started key whose request gave up holds no lease")
	return invoice, key
}

// parkedPayment parks a payment whose outcome nothing can resolve: a gateway with neither
// inquiry nor idempotency keys charges it and loses the answer; nothing can ask and nothing may
// charge again, so the key is parked (outcome_unknown) for an operator. The charge did happen.
func (e *env) parkedPayment(as who) (invoice, key string) {
	e.t.Helper()
	invoice, _ = e.invoice(as, 5000)
	_, err := e.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = false, false })
	require.NoError(e.t, err)
	defer func() {
		_, err := e.sim.SetFaults(func(s *sim.Settings) { s.Idempotency, s.Inquiry = true, true })
		require.NoError(e.t, err)
	}()
	charges := e.sim.TotalCharges()
	e.sim.LoseNext(1)
	key, body := e.payment(as, invoice, 2000, http.StatusServiceUnavailable)
	require.Equal(e.t, "operation_parked", body["error"])
	k := e.key(as, key)
	require.Equal(e.t, saga.KeyStatusParked, k.Status, "last error: %s", k.LastError)
	require.Equal(e.t, saga.ParkedOutcomeUnknown, k.ParkedReason, "nothing can tell whether the lost charge happened")
	require.Equal(e.t, charges+1, e.sim.TotalCharges(), "the lost charge happened, and only once")
	return invoice, key
}

func (e *env) key(as who, key string) *saga.Key {
	e.t.Helper()
	k, err := e.client.KeyGet(e.t.Context(), as.scope(), key)
	require.NoError(e.t, err)
	return k
}

// req is one request to the console.
type req struct {
	method, path string
	// accept defaults to application/json.
	accept string
	// bearer sends Authorization: Bearer bearer.
	bearer string
	// cookie sends a session cookie.
	cookie *http.Cookie
	// form is sent urlencoded.
	form   url.Values
	header http.Header
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r *reply) json(t testing.TB) map[string]any {
	t.Helper()
	want := "application/json"
	if r.status >= 400 {
		want = "application/problem+json" // every error is RFC 9457 problem details
	}
	require.Equal(t, want, r.header.Get("Content-Type"), "body: %s", r.body)
	return decode(t, r.body)
}

func (e *env) do(r req) *reply {
	e.t.Helper()
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	if r.method == "" {
		r.method = "GET"
	}
	hr, err := http.NewRequest(r.method, e.console.URL+r.path, body)
	require.NoError(e.t, err)
	for k, vs := range r.header {
		hr.Header[k] = vs
	}
	if r.form != nil {
		hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.accept == "" {
		r.accept = "application/json"
	}
	hr.Header.Set("Accept", r.accept)
	if r.bearer != "" {
		hr.Header.Set("Authorization", "Bearer "+r.bearer)
	}
	if r.cookie != nil {
		hr.AddCookie(r.cookie)
	}
	resp, err := e.http.Do(hr)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// getJSON reads a console path as JSON with the Bearer token and requires 200.
func (e *env) getJSON(path string) map[string]any {
	e.t.Helper()
	r := e.do(req{path: path, bearer: token})
	require.Equal(e.t, http.StatusOK, r.status, string(r.body))
	return r.json(e.t)
}

// browserAccept is what a browser's navigation sends.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// addOperator adds an operator to the database and returns their token.
func (e *env) addOperator(name string) string {
	e.t.Helper()
	_, tok, err := operator.NewStore(e.db.Pool).Add(e.t.Context(), name)
	require.NoError(e.t, err)
	return tok
}

// login logs in with the form and returns the session cookie and the CSRF token of the
// session (read from the overview's logout form, as a browser has it).
func (e *env) login() (*http.Cookie, string) {
	e.t.Helper()
	return e.loginWith(token)
}

// loginWith is login with an operator's token.
func (e *env) loginWith(tok string) (*http.Cookie, string) {
	e.t.Helper()
	r := e.do(req{method: "POST", path: "/login", accept: browserAccept, form: url.Values{"token": {tok}}})
	require.Equal(e.t, http.StatusSeeOther, r.status, string(r.body))
	cookie := sessionCookie(e.t, r)
	page := e.do(req{path: "/", accept: browserAccept, cookie: cookie})
	require.Equal(e.t, http.StatusOK, page.status)
	return cookie, csrfOf(e.t, page.body)
}

func sessionCookie(t testing.TB, r *reply) *http.Cookie {
	t.Helper()
	cookies := (&http.Response{Header: r.header}).Cookies()
	require.Len(t, cookies, 1)
	return cookies[0]
}

// csrfOf finds the CSRF token in a page's first form.
func csrfOf(t testing.TB, page []byte) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := bytes.Index(page, []byte(marker))
	require.GreaterOrEqual(t, i, 0, "no CSRF field in the page")
	rest := page[i+len(marker):]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// keyPath is a key's page path.
func keyPath(as who, key string) string {
	return "/keys/" + url.PathEscape(as.tenant) + "/" + url.PathEscape(as.actor) + "/" + url.PathEscape(key)
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(b, &v), "body: %s", b)
	return v
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
