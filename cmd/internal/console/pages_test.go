package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/cmd/pgsaga/cli"
	"github.com/pgsaga/pgsaga/internal/keyjson"
	"github.com/pgsaga/pgsaga/saga"
)

// TestOverviewJSON: counts by state and by operation, the number of stuck keys and the one that
// has waited longest, as docs/api/console.yaml shapes them.
func TestOverviewJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})

	empty := e.getJSON("/")
	require.Equal(t, map[string]any{
		"counts":       map[string]any{"started": 0.0, "completed": 0.0, "failed": 0.0},
		"by_operation": map[string]any{},
		"stuck":        0.0,
		"oldest_stuck": nil,
	}, empty)

	inv, _ := e.invoice(alice, 10000)
	e.payment(alice, inv, 1000, http.StatusCreated)
	_, parked := e.parkedPayment(alice) // its invoice is a third completed key
	_, stuck := e.stuckPayment(alice)   // and a fourth
	got := e.getJSON("/")
	require.Equal(t, map[string]any{"started": 1.0, "completed": 4.0, "failed": 1.0}, got["counts"])
	require.Equal(t, map[string]any{
		"create_invoice": map[string]any{"started": 0.0, "completed": 3.0, "failed": 0.0},
		"create_payment": map[string]any{"started": 1.0, "completed": 1.0, "failed": 1.0},
	}, got["by_operation"])
	require.Equal(t, 2.0, got["stuck"])
	oldest := got["oldest_stuck"].(map[string]any)
	require.Equal(t, parked, oldest["key"], "the parked key changed before the stuck one")
	require.Equal(t, asJSON(t, e.key(alice, parked)), oldest, "the oldest stuck key is a key object")
	_ = stuck
}

// TestKeyJSONIsShowJSON: a key's JSON twin is byte for byte what `show --json` prints (calls,
// parked_reason and history included), before and after an operator settled it.
func TestKeyJSONIsShowJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	_, parked := e.parkedPayment(alice)
	inv, _ := e.invoice(alice, 3000)
	done, _ := e.payment(alice, inv, 3000, http.StatusCreated)

	check := func(key string) map[string]any {
		r := e.do(req{path: keyPath(alice, key), bearer: token})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		var stdout bytes.Buffer
		code := cli.Run(context.Background(), &cli.App{}, []string{"show", "--database-url", e.db.URL,
			"--tenant", alice.tenant, "--actor", alice.actor, "--json", key}, &cli.Env{Stdout: &stdout})
		require.Equal(t, cli.ExitOK, code)
		require.JSONEq(t, stdout.String(), string(r.body))
		return r.json(t)
	}
	k := check(parked)
	require.Equal(t, "failed", k["state"])
	require.Equal(t, "outcome_unknown", k["parked_reason"])
	require.Len(t, k["calls"], 1)
	call := k["calls"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"step", "attempt", "reference", "started_at", "ended_at", "outcome", "provider_id"}, keys(call))
	require.Equal(t, "unknown", call["outcome"])
	require.Equal(t, []any{}, k["history"])

	r := e.do(req{method: "POST", path: keyPath(alice, parked) + "/settle", bearer: token,
		form: url.Values{"outcome": {"failed"}, "note": {"no charge at the provider"}}})
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	k = check(parked)
	require.Equal(t, "completed", k["state"])
	require.Nil(t, k["parked_reason"])
	action := k["history"].([]any)[0].(map[string]any)
	require.ElementsMatch(t, []string{"at", "by", "action", "outcome", "note", "reference"}, keys(action))

	k = check(done)
	require.ElementsMatch(t, []string{"tenant", "actor", "key", "operation", "state", "recovery_point", "attempts", "locked_until",
		"last_error", "response", "created_at", "updated_at", "parked_reason", "calls", "history"}, keys(k))
	require.Equal(t, 201.0, k["response"].(map[string]any)["status"])
}

// TestKeyListPages: 50 keys a page, newest first, every key exactly once across the pages,
// next_cursor null on the last; the key objects are `keys --json`'s.
func TestKeyListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	const n = 123
	made := map[string]bool{}
	for range n {
		_, key := e.invoice(alice, 100)
		made[key] = true
	}
	seen := map[string]bool{}
	var order []time.Time
	path, pages := "/keys", 0
	for {
		page := e.getJSON(path)
		pages++
		list := page["keys"].([]any)
		require.LessOrEqual(t, len(list), 50)
		for _, k := range list {
			key := k.(map[string]any)["key"].(string)
			require.False(t, seen[key], "key %s listed twice", key)
			seen[key] = true
			created, err := time.Parse(time.RFC3339Nano, k.(map[string]any)["created_at"].(string))
			require.NoError(t, err)
			order = append(order, created)
		}
		next := page["next_cursor"]
		if next == nil {
			require.Contains(t, page, "next_cursor", "next_cursor is null, not absent, on the last page")
			break
		}
		require.Len(t, list, 50, "a page before the last is full")
		path = "/keys?cursor=" + url.QueryEscape(next.(string))
	}
	require.Equal(t, 3, pages)
	require.Equal(t, made, seen)
	for i := 1; i < len(order); i++ {
		require.False(t, order[i-1].Before(order[i]), "newest first: %s before %s", order[i-1], order[i])
	}

	// The JSON objects are keys --json's.
	var stdout bytes.Buffer
	require.Equal(t, cli.ExitOK, cli.Run(context.Background(), &cli.App{}, []string{"keys", "--database-url", e.db.URL, "--json", "--limit", "50"}, &cli.Env{Stdout: &stdout}))
	r := e.do(req{path: "/keys", bearer: token})
	var fromCLI, fromConsole struct{ Keys []json.RawMessage }
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &fromCLI))
	require.NoError(t, json.Unmarshal(r.body, &fromConsole))
	require.Equal(t, len(fromCLI.Keys), len(fromConsole.Keys))
	for i := range fromCLI.Keys {
		require.JSONEq(t, string(fromCLI.Keys[i]), string(fromConsole.Keys[i]))
	}

	// The HTML page links to the next page with the same filter.
	html := e.do(req{path: "/keys?state=completed", bearer: token, accept: browserAccept})
	require.Equal(t, http.StatusOK, html.status)
	require.Equal(t, 50, strings.Count(string(html.body), `<tr class="row-ok">`))
	require.Regexp(t, `href="/keys\?cursor=[A-Za-z0-9_-]+&amp;state=completed" rel="next"`, string(html.body))
}

// TestKeyListFilters: state, operation, tenant, stuck and key prefix filter the list, alone
// and together; a bad value is 400 invalid_request, never a 500.
func TestKeyListFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	bob := who{"tenant-2", "bob"}
	inv, invKey := e.invoice(alice, 10000)
	paid, _ := e.payment(alice, inv, 1000, http.StatusCreated)
	_, parked := e.parkedPayment(alice)
	_, stuck := e.stuckPayment(alice)
	_, bobInv := e.invoice(bob, 500)
	all := e.listed("/keys")
	require.Len(t, all, 7)

	for query, want := range map[string][]string{
		"state=failed":             {parked},
		"state=started":            {stuck},
		"stuck=1":                  {parked, stuck},
		"stuck=true&state=started": {stuck},
		"operation=create_payment&state=completed": {paid},
		"tenant=tenant-2":                          {bobInv},
		"tenant=tenant-2&operation=create_payment": {},
		"q=" + url.QueryEscape(invKey[:20]):        {invKey},
		"q=" + url.QueryEscape(invKey):             {invKey},
		"q=zzz":                                    {},
		"stuck=0&tenant=tenant-2":                  {bobInv},
		"operation=no_such_operation":              {},
	} {
		require.ElementsMatch(t, want, e.listed("/keys?"+query), query)
	}

	for _, query := range []string{
		"state=parked", "state=STARTED", "stuck=yes", "stuck=2", "cursor=not-a-cursor", "cursor=" + url.QueryEscape("eyJjIjoiMjAyMC0wMS0wMVQwMDowMDowMFoiLCJrIjoiXHUwMDAwIn0"),
		"tenant=%00", "q=%FF", "operation=" + strings.Repeat("x", 256), "q=a%00b",
	} {
		r := e.do(req{path: "/keys?" + query, bearer: token})
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", query, r.body)
		require.Equal(t, "invalid_request", r.json(t)["error"], query)
		r = e.do(req{path: "/keys?" + query, bearer: token, accept: browserAccept})
		require.Equal(t, http.StatusBadRequest, r.status, query)
		require.Contains(t, r.header.Get("Content-Type"), "text/html")
	}
}

// TestKeyPage: a key's page, for a key with characters that need escaping in a path; an
// unknown key is 404 not_found for a script and a page for a browser.
func TestKeyPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &envOpts{noRiver: true})
	odd := who{"tenant/with slash", ".."}
	key := "odd/key?with#chars%2F&more"
	status, body := e.apiPost(odd, "/invoices", key, `{"amount": 100, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))

	list := e.do(req{path: "/keys", bearer: token, accept: browserAccept})
	href := regexpFind(t, `href="(/keys/[^"]+)"><code>`, string(list.body))
	page := e.do(req{path: strings.ReplaceAll(href, "&amp;", "&"), bearer: token})
	require.Equal(t, http.StatusOK, page.status, "%s: %s", href, page.body)
	require.Equal(t, key, page.json(t)["key"])
	require.Equal(t, odd.tenant, page.json(t)["tenant"])

	html := e.do(req{path: strings.ReplaceAll(href, "&amp;", "&"), bearer: token, accept: browserAccept})
	require.Equal(t, http.StatusOK, html.status)
	require.Contains(t, string(html.body), "201 Created")

	for _, path := range []string{keyPath(alice, "no-such-key"), "/keys/t/a/%00bad", "/keys/t/a/%FF%FE"} {
		r := e.do(req{path: path, bearer: token})
		require.Equal(t, http.StatusNotFound, r.status, path)
		require.Equal(t, "not_found", r.json(t)["error"])
		r = e.do(req{path: path, bearer: token, accept: browserAccept})
		require.Equal(t, http.StatusNotFound, r.status)
		require.Contains(t, string(r.body), "There is no key")
	}
}

// listed is the keys of every page of a listing.
func (e *env) listed(path string) []string {
	e.t.Helper()
	out := []string{}
	for {
		page := e.getJSON(path)
		for _, k := range page["keys"].([]any) {
			out = append(out, k.(map[string]any)["key"].(string))
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			return out
		}
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path = strings.Split(path, "&cursor=")[0] + sep + "cursor=" + url.QueryEscape(next)
	}
}

// asJSON is k as a key object of the JSON twins.
func asJSON(t *testing.T, k *saga.Key) map[string]any {
	t.Helper()
	b, err := json.Marshal(keyjson.FromKey(k))
	require.NoError(t, err)
	return decode(t, b)
}

func regexpFind(t *testing.T, pattern, s string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	require.NotNil(t, m, "no %s in the page", pattern)
	return m[1]
}

func keys(m map[string]any) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}
