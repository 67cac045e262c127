package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/operator"
	"github.com/pgsaga/pgsaga/saga"
)

// Environment variables of the browser test.
const (
	// envSkipBrowser=1 skips the browser test where Chromium cannot be installed. Without it, a
	// missing Chromium fails the test: CI installs it (apt-get install -y chromium).
	envSkipBrowser = "PGSAGA_SKIP_BROWSER"
	// envScreenshots names a directory for the test's screenshots (default: a temporary one).
	envScreenshots = "PGSAGA_SCREENSHOTS"
	// envChromium overrides the browser's path (default: chromium on PATH).
	envChromium = "PGSAGA_CHROMIUM"
)

// TestBrowser drives the console in headless Chromium as an operator would, with the mouse and
// the keyboard: log in (with their own token, as themselves), see the overview, list the stuck
// keys, open a parked payment, settle it as succeeded with the provider's charge, and see the
// result and the history under their name. A screenshot of each step is saved. The pages must
// raise no console error (a CSP violation is one). The browser keeps the session cookie as the
// console sets it: __Host- prefixed, Secure, HttpOnly, SameSite=Strict.
func TestBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	e := newEnv(t, nil)
	_, parked, charge := seedOperatorsDay(e)
	ana := e.addOperator("ana")

	b := newTab(t, e, newBrowser(t, chromium))
	// A browser without a session is sent to the login page.
	b.step("01-login", chromedp.Navigate(e.console.URL+"/"), chromedp.WaitVisible(chromedp.ID("token")))
	require.Equal(t, "/login", b.location())

	b.step("02-overview",
		chromedp.SendKeys(chromedp.ID("operator"), "ana"),
		chromedp.SendKeys(chromedp.ID("token"), ana),
		b.clickAndLoad(`form button[type=submit]`),
		chromedp.WaitVisible(chromedp.CSS(`.tiles`)),
	)
	require.Equal(t, "/", b.location())
	require.Equal(t, "4", b.text(`.tile-stuck .num`), "two stuck and two parked keys")
	require.Equal(t, "2", b.text(`.tile-parked .num`))
	require.Contains(t, b.text(`.oldest`), "Oldest stuck key")
	require.Equal(t, "signed in as ana", b.text(`header .who`))

	ck := b.sessionCookie()
	require.Equal(t, "__Host-pgsaga_console", ck.Name)
	require.True(t, ck.Secure, "the browser keeps the Secure cookie")
	require.True(t, ck.HTTPOnly)
	require.Equal(t, network.CookieSameSiteStrict, ck.SameSite)
	require.Equal(t, "/", ck.Path)
	hasCookie, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`document.cookie.includes("pgsaga_console")`))
	require.NoError(t, err)
	require.False(t, hasCookie, "no script can read the session cookie")

	b.step("03-stuck-keys", b.clickAndLoad(`header nav a[href="/keys?stuck=1"]`), chromedp.WaitVisible(chromedp.CSS(`table.keys`)))
	require.Equal(t, "/keys?stuck=1", b.location())
	rows := b.text(`table.keys tbody`)
	require.Equal(t, 4, strings.Count(rows, "key-"), rows)
	require.Contains(t, rows, parked)

	b.step("04-parked-key", b.clickAndLoad(`a[href="`+keyPath(alice, parked)+`"]`), chromedp.WaitVisible(chromedp.CSS(`form.settle`)))
	require.Equal(t, keyPath(alice, parked), b.location())
	require.Contains(t, b.text(`.callout.parked`), "Parked")
	require.Contains(t, b.text(`ol.timeline`), "unknown")

	b.step("05-settled",
		chromedp.Click(chromedp.CSS(`input[name=outcome][value=succeeded]`)),
		chromedp.SendKeys(chromedp.ID("reference"), charge),
		chromedp.SendKeys(chromedp.ID("note"), "Charge found in the provider's dashboard, captured."),
		b.clickAndLoad(`form.settle button[type=submit]`),
		chromedp.WaitVisible(chromedp.CSS(`.flash.good`)),
	)
	require.Equal(t, keyPath(alice, parked), b.location(), "back on the key's page")
	require.Equal(t, "Settled as succeeded: its stored response is 201 Created.", b.text(`.flash.good`))
	history := b.text(`table.history`)
	require.Contains(t, history, "ana")
	require.Contains(t, history, "settle")
	require.Contains(t, history, charge)
	require.Contains(t, b.text(`pre.body`), `"status": "succeeded"`)

	k := e.key(alice, parked)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Equal(t, "ana", k.History[0].By)

	// River's own UI renders under the console's session, within its CSP.
	b.step("06-river", chromedp.Navigate(e.console.URL+"/river/"), chromedp.WaitVisible(chromedp.CSS(`#root nav`)))
	b.requireNoProblems()
}

// TestBrowserOperators: two operators, each in their own browser profile, settle one parked key
// each, and each key's history names the one who settled it. Revoking one ends their session at
// their next click. Then 20 wrong logins in a row from the browser: the first 10 are told the
// token is wrong, the next 10 that there were too many attempts (429), and every one is logged
// with the address.
func TestBrowserOperators(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	logs := &syncBuffer{}
	e := newEnv(t, &envOpts{noRiver: true, logs: logs})
	_, first := e.parkedPayment(alice)
	_, second := e.parkedPayment(alice)
	tokens := map[string]string{"ana": e.addOperator("ana"), "ben": e.addOperator("ben")}

	browser := newBrowser(t, chromium)
	tabs := map[string]*tab{}
	for name, key := range map[string]string{"ana": first, "ben": second} {
		ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext()) // a profile of its own
		t.Cleanup(cancel)
		b := newTab(t, e, ctx)
		tabs[name] = b
		b.step("operators-"+name+"-login", chromedp.Navigate(e.console.URL+keyPath(alice, key)), chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SendKeys(chromedp.ID("token"), tokens[name]),
			b.clickAndLoad(`form button[type=submit]`),
			chromedp.WaitVisible(chromedp.CSS(`form.settle`)),
		)
		require.Equal(t, keyPath(alice, key), b.location(), "back where the login was asked for")
		require.Equal(t, "signed in as "+name, b.text(`header .who`))
	}
	for name := range map[string]string{"ana": first, "ben": second} {
		b := tabs[name]
		b.step("operators-"+name+"-settled",
			chromedp.Click(chromedp.CSS(`input[name=outcome][value=failed]`)),
			chromedp.SendKeys(chromedp.ID("note"), name+" checked the provider: no charge."),
			b.clickAndLoad(`form.settle button[type=submit]`),
			chromedp.WaitVisible(chromedp.CSS(`.flash.good`)),
		)
		require.Contains(t, b.text(`table.history`), name)
	}
	require.Equal(t, "ana", e.key(alice, first).History[0].By)
	require.Equal(t, "ben", e.key(alice, second).History[0].By)
	require.NotEqual(t, tabs["ana"].sessionCookie().Value, tabs["ben"].sessionCookie().Value)

	// Revoked, ben's next click lands on the login page; ana goes on.
	_, err := operator.NewStore(e.db.Pool).Revoke(t.Context(), "ben")
	require.NoError(t, err)
	ben := tabs["ben"]
	ben.step("operators-ben-revoked", ben.clickAndLoad(`header nav a[href="/keys?stuck=1"]`), chromedp.WaitVisible(chromedp.ID("token")))
	require.Equal(t, "/login?next="+url.QueryEscape("/keys?stuck=1"), ben.location())
	ana := tabs["ana"]
	ana.step("operators-ana-still-in", ana.clickAndLoad(`header nav a[href="/keys?stuck=1"]`), chromedp.WaitVisible(chromedp.CSS(`p.empty`)))
	require.Equal(t, "/keys?stuck=1", ana.location())
	require.Equal(t, "No keys match.", ana.text(`p.empty`), "both keys settled, none is stuck")

	// Twenty wrong tokens in a row, typed into the login form.
	var flashes []string
	for i := range 20 {
		ben.step(fmt.Sprintf("operators-wrong-login-%02d", i+1),
			chromedp.SendKeys(chromedp.ID("token"), "pgso_not-a-token"),
			ben.clickAndLoad(`form button[type=submit]`),
			chromedp.WaitVisible(chromedp.CSS(`.flash.bad`)),
		)
		flashes = append(flashes, ben.text(`.flash.bad`))
	}
	for i, f := range flashes {
		if i < 10 {
			require.Equal(t, "That is not an operator's token.", f, "attempt %d", i+1)
		} else {
			require.Regexp(t, `^Too many failed sign-ins: try again in [1-6]?[0-9] seconds\.$`, f, "attempt %d", i+1)
		}
	}
	// The right token of a live operator is refused too while the address is throttled.
	ben.step("operators-throttled",
		chromedp.SendKeys(chromedp.ID("token"), tokens["ana"]),
		ben.clickAndLoad(`form button[type=submit]`),
		chromedp.WaitVisible(chromedp.CSS(`.flash.bad`)),
	)
	require.Contains(t, ben.text(`.flash.bad`), "Too many failed sign-ins")
	require.Contains(t, ben.location(), "/login")
	require.Equal(t, 10, strings.Count(logs.String(), `msg="authentication refused" surface=console reason=unknown_token client=127.0.0.1 via=form`), logs.String())
	require.Equal(t, 11, strings.Count(logs.String(), `msg="authentication refused" surface=console reason=too_many_attempts client=127.0.0.1 via=form`), logs.String())
	ben.requireNoProblems()
	ana.requireNoProblems()
}

// tab is one browser tab on the console: the steps of a test, each with a screenshot.
type tab struct {
	t     *testing.T
	e     *env
	ctx   context.Context
	shots string

	mu       sync.Mutex
	problems []string
}

// newTab collects ctx's console errors (a CSP violation is one) for requireNoProblems.
func newTab(t *testing.T, e *env, ctx context.Context) *tab {
	t.Helper()
	shots := os.Getenv(envScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))
	b := &tab{t: t, e: e, ctx: ctx, shots: shots}
	// Open the tab before anything listens on it: two first uses at once would open two.
	require.NoError(t, chromedp.Do(ctx), "opening a tab")
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			// riverui's validation library probes whether eval works (Function("")) and falls
			// back when the CSP refuses it; the browser logs the refusal. The console's own
			// answers of 401 and 429 to a wrong login are logged as failed loads. Nothing else
			// may.
			evalProbe := strings.Contains(m.URL, "/river/assets/") && strings.Contains(m.Text, "'script-src'")
			refusedLogin := strings.HasSuffix(m.URL, "/login") &&
				(strings.Contains(m.Text, "401") || strings.Contains(m.Text, "429"))
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !evalProbe && !refusedLogin {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s %q at %s:%d", m.Type, m.Text, m.URL, m.Line))
				b.mu.Unlock()
			}
		}
	}()
	t.Logf("screenshots in %s", shots)
	return b
}

func (b *tab) step(name string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	stepCtx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	require.NoError(b.t, chromedp.Do(stepCtx, actions...), "step %s", name)
	shot, err := chromedp.Run(stepCtx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.NoError(b.t, os.WriteFile(filepath.Join(b.shots, name+".png"), shot, 0o644))
}

// readTimeout bounds one read of the page (a text, the location): a browser that never answers
// fails the test instead of hanging it.
const readTimeout = 15 * time.Second

func (b *tab) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, readTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err, "reading %s", sel)
	return s
}

func (b *tab) location() string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, readTimeout)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(b.t, err, "reading the location")
	return strings.TrimPrefix(loc, b.e.console.URL)
}

func (b *tab) clickAndLoad(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))(ctx, tg)
		return chromedp.Void{}, err
	}
}

// sessionCookie is the console's session cookie as the browser keeps it.
func (b *tab) sessionCookie() *network.Cookie {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, readTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.e.console.URL + "/"}})
	require.NoError(b.t, err)
	for _, ck := range res.Cookies {
		if strings.HasSuffix(ck.Name, "pgsaga_console") {
			return ck
		}
	}
	b.t.Fatalf("the browser keeps no session cookie: %v", res.Cookies)
	return nil
}

func (b *tab) requireNoProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Empty(b.t, b.problems, "the pages raised console errors")
}

// seedOperatorsDay fills the database as a day of payments would: paid invoices, a declined
// card, two payments stuck on a gateway outage and two parked with an unknowable outcome. It
// returns a parked key that has waited longest and the charge the provider made for it.
func seedOperatorsDay(e *env) (stuck []string, parked, charge string) {
	e.t.Helper()
	bob := who{"tenant-2", "bob"}
	for i := range 4 {
		inv, _ := e.invoice(alice, 5000+1000*i)
		e.payment(alice, inv, 5000+1000*i, http.StatusCreated)
	}
	inv, _ := e.invoice(bob, 2500)
	e.payment(bob, inv, 2500, http.StatusCreated)
	_, parked = e.parkedPayment(alice)
	ledger := e.sim.Ledger().Charges
	charge = ledger[len(ledger)-1].ID
	e.parkedPayment(bob)
	for _, as := range []who{alice, bob} {
		_, key := e.stuckPayment(as)
		stuck = append(stuck, key)
	}
	return stuck, parked, charge
}

// findChromium is the browser to drive. A missing browser fails the test unless
// PGSAGA_SKIP_BROWSER=1.
func findChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(envSkipBrowser) == "1" {
		t.Skip("chromium not found and " + envSkipBrowser + "=1")
	}
	t.Fatalf("chromium not found: install it (apt-get install -y chromium), point %s at it, or set %s=1 to skip", envChromium, envSkipBrowser)
	return ""
}

// newBrowser starts headless Chromium with a fresh profile and returns a tab's context, closed
// (and the browser stopped) when the test ends. The flags keep it off the network: this
// machine has none, and Chromium's background services would otherwise try.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "pgsaga-chromium-")
	require.NoError(t, err)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1440, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithLogf(func(format string, args ...any) { t.Logf(format, args...) }))
	// The first Run starts the browser; a timeout here would bound the browser's whole life.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`1`)); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		// Chromium's helpers may write to the profile for a moment after it stops.
		deadline := time.Now().Add(5 * time.Second)
		for os.RemoveAll(profile) != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	})
	return ctx
}
