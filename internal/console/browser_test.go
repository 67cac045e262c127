package console_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

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
// the keyboard: log in, see the overview, list the stuck keys, open a parked payment, settle it
// as succeeded with the provider's charge, and see the result and the history. A screenshot of
// each step is saved. The pages must raise no console error (a CSP violation is one).
func TestBrowser(t *testing.T) {
	t.Parallel()
	chromium := findChromium(t)
	shots := os.Getenv(envScreenshots)
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))

	e := newEnv(t, nil)
	_, parked, charge := seedOperatorsDay(e)

	ctx := newBrowser(t, chromium)
	var (
		mu       sync.Mutex
		problems []string
	)
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			// riverui's validation library probes whether eval works (Function("")) and falls
			// back when the CSP refuses it; the browser logs the refusal. Nothing else may.
			evalProbe := strings.Contains(m.URL, "/river/assets/") && strings.Contains(m.Text, "'script-src'")
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !evalProbe {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s %q at %s:%d", m.Type, m.Text, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	step := func(name string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		stepCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		require.NoError(t, chromedp.Do(stepCtx, actions...), "step %s", name)
		shot, err := chromedp.Run(stepCtx, chromedp.FullScreenshot(100))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name+".png"), shot, 0o644))
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return s
	}
	location := func() string {
		t.Helper()
		loc, err := chromedp.Run(ctx, chromedp.Location())
		require.NoError(t, err)
		return strings.TrimPrefix(loc, e.console.URL)
	}
	clickAndLoad := func(sel string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := chromedp.WaitEvent(page.LoadEventFired, nil, chromedp.Click(chromedp.CSS(sel)))(ctx, tg)
			return chromedp.Void{}, err
		}
	}

	// A browser without a session is sent to the login page.
	step("01-login", chromedp.Navigate(e.console.URL+"/"), chromedp.WaitVisible(chromedp.ID("token")))
	require.Equal(t, "/login", location())

	step("02-overview",
		chromedp.SendKeys(chromedp.ID("token"), token),
		clickAndLoad(`form button[type=submit]`),
		chromedp.WaitVisible(chromedp.CSS(`.tiles`)),
	)
	require.Equal(t, "/", location())
	require.Equal(t, "4", text(`.tile-stuck .num`), "two stuck and two parked keys")
	require.Equal(t, "2", text(`.tile-parked .num`))
	require.Contains(t, text(`.oldest`), "Oldest stuck key")

	step("03-stuck-keys", clickAndLoad(`header nav a[href="/keys?stuck=1"]`), chromedp.WaitVisible(chromedp.CSS(`table.keys`)))
	require.Equal(t, "/keys?stuck=1", location())
	rows := text(`table.keys tbody`)
	require.Equal(t, 4, strings.Count(rows, "key-"), rows)
	require.Contains(t, rows, parked)

	step("04-parked-key", clickAndLoad(`a[href="`+keyPath(alice, parked)+`"]`), chromedp.WaitVisible(chromedp.CSS(`form.settle`)))
	require.Equal(t, keyPath(alice, parked), location())
	require.Contains(t, text(`.callout.parked`), "Parked")
	require.Contains(t, text(`ol.timeline`), "unknown")

	step("05-settled",
		chromedp.Click(chromedp.CSS(`input[name=outcome][value=succeeded]`)),
		chromedp.SendKeys(chromedp.ID("reference"), charge),
		chromedp.SendKeys(chromedp.ID("note"), "Charge found in the provider's dashboard, captured."),
		clickAndLoad(`form.settle button[type=submit]`),
		chromedp.WaitVisible(chromedp.CSS(`.flash.good`)),
	)
	require.Equal(t, keyPath(alice, parked), location(), "back on the key's page")
	require.Equal(t, "Settled as succeeded: its stored response is 201 Created.", text(`.flash.good`))
	history := text(`table.history`)
	require.Contains(t, history, "console")
	require.Contains(t, history, "settle")
	require.Contains(t, history, charge)
	require.Contains(t, text(`pre.body`), `"status": "succeeded"`)

	k := e.key(alice, parked)
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Equal(t, "console", k.History[0].By)

	// River's own UI renders under the console's session, within its CSP.
	step("06-river", chromedp.Navigate(e.console.URL+"/river/"), chromedp.WaitVisible(chromedp.CSS(`#root nav`)))

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, problems, "the pages raised console errors")
	t.Logf("screenshots in %s", shots)
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
