package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/pgsaga/pgsaga/internal/keyjson"
	"github.com/pgsaga/pgsaga/saga"
)

// overviewStuck is how many stuck keys the overview lists before linking to the rest.
const overviewStuck = 10

// countsJSON is keys by state.
type countsJSON struct {
	Started   int `json:"started"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
}

func newCounts(m map[saga.KeyStatus]int) countsJSON {
	return countsJSON{Started: m[saga.KeyStatusStarted], Completed: m[saga.KeyStatusCompleted], Failed: m[saga.KeyStatusParked]}
}

// overviewJSON is the overview's JSON twin (docs/api/console.yaml).
type overviewJSON struct {
	Counts      countsJSON            `json:"counts"`
	ByOperation map[string]countsJSON `json:"by_operation"`
	Stuck       int                   `json:"stuck"`
	OldestStuck *keyjson.Key          `json:"oldest_stuck"`
}

type overviewView struct {
	Counts     countsJSON
	Total      int
	Stuck      int
	Operations []operationRow
	Oldest     *keyRow
	StuckKeys  []keyRow
	MoreStuck  bool
	// Unmatched counts the provider's charges the worker's reconciliation found no key for.
	Unmatched int
}

func (*overviewView) title() (string, string) { return "Overview", "overview" }

type operationRow struct {
	Name string
	countsJSON
}

// overview is GET /: keys by state and operation, the stuck keys and the oldest of them.
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	counts, err := c.cfg.Client.KeyCount(ctx)
	if err != nil {
		c.internalError(w, r, "counting keys", err)
		return
	}
	if !wantsHTML(r) {
		out := overviewJSON{Counts: newCounts(counts.ByState), ByOperation: map[string]countsJSON{}, Stuck: counts.Stuck}
		for op, m := range counts.ByOperation {
			out.ByOperation[op] = newCounts(m)
		}
		if counts.OldestStuck != nil {
			k := keyjson.FromKey(counts.OldestStuck)
			out.OldestStuck = &k
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	v := &overviewView{Counts: newCounts(counts.ByState), Stuck: counts.Stuck}
	if v.Unmatched, err = c.unmatchedCount(ctx); err != nil {
		c.internalError(w, r, "counting unmatched charges", err)
		return
	}
	v.Total = v.Counts.Started + v.Counts.Completed + v.Counts.Failed
	for op, m := range counts.ByOperation {
		v.Operations = append(v.Operations, operationRow{Name: op, countsJSON: newCounts(m)})
	}
	slices.SortFunc(v.Operations, func(a, b operationRow) int { return strings.Compare(a.Name, b.Name) })
	if counts.OldestStuck != nil {
		row := newKeyRow(counts.OldestStuck)
		v.Oldest = &row
	}
	if counts.Stuck > 0 {
		page, err := c.cfg.Client.KeyList(ctx, &saga.KeyListParams{Stuck: true, Limit: overviewStuck})
		if err != nil {
			c.internalError(w, r, "listing stuck keys", err)
			return
		}
		for _, k := range page.Keys {
			v.StuckKeys = append(v.StuckKeys, newKeyRow(k))
		}
		v.MoreStuck = page.NextCursor != ""
	}
	c.render(w, r, http.StatusOK, "overview", v)
}

// listFilter is a key list's query: GET /keys?state=&operation=&tenant=&stuck=1&q=&cursor=.
type listFilter struct {
	State     string
	Operation string
	Tenant    string
	Stuck     bool
	Q         string
	Cursor    string
}

// maxParam caps a query parameter: no tenant, operation or key is longer.
const maxParam = 255

// parseFilter reads and checks a key list's query parameters.
func parseFilter(q url.Values) (*listFilter, error) {
	f := &listFilter{State: q.Get("state"), Operation: q.Get("operation"), Tenant: q.Get("tenant"), Q: q.Get("q"), Cursor: q.Get("cursor")}
	for name, v := range map[string]string{"state": f.State, "operation": f.Operation, "tenant": f.Tenant, "q": f.Q} {
		if err := checkText(name, v, maxParam); err != nil {
			return nil, err
		}
	}
	switch saga.KeyStatus(f.State) {
	case "", saga.KeyStatusStarted, saga.KeyStatusCompleted, saga.KeyStatusParked:
	default:
		return nil, errors.New("state must be started, completed or failed")
	}
	switch q.Get("stuck") {
	case "", "0", "false":
	case "1", "true", "on":
		f.Stuck = true
	default:
		return nil, errors.New("stuck must be 1 or 0")
	}
	if len(f.Cursor) > 4*maxParam {
		return nil, errors.New("cursor is not one this console gave")
	}
	return f, nil
}

// checkText refuses a value the database would refuse, or longer than limit bytes: no key,
// tenant or operation is longer than 255, and PostgreSQL's text holds neither NUL nor bytes
// that are not UTF-8.
func checkText(name, v string, limit int) error {
	switch {
	case len(v) > limit:
		return fmt.Errorf("%s is longer than %d bytes", name, limit)
	case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
		return errors.New(name + " must be UTF-8 text without NUL")
	}
	return nil
}

// query is the filter as a query string, with cursor.
func (f *listFilter) query(cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"state": f.State, "operation": f.Operation, "tenant": f.Tenant, "q": f.Q, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Stuck {
		q.Set("stuck", "1")
	}
	if len(q) == 0 {
		return "/keys"
	}
	return "/keys?" + q.Encode()
}

// keysJSON is a key list's JSON twin: next_cursor is null on the last page.
type keysJSON struct {
	Keys       []keyjson.Key `json:"keys"`
	NextCursor *string       `json:"next_cursor"`
}

type keyListView struct {
	Filter     *listFilter
	Operations []string
	Rows       []keyRow
	// Next is the next page's URL; First the first page's when this is a later one.
	Next, First string
	Heading     string
}

func (v *keyListView) title() (string, string) {
	switch {
	case v.Filter.Stuck && v.Filter.State == "" && v.Filter.Operation == "" && v.Filter.Tenant == "" && v.Filter.Q == "":
		return "Stuck keys", "stuck"
	case v.Filter.State == string(saga.KeyStatusParked) && !v.Filter.Stuck && v.Filter.Operation == "" && v.Filter.Tenant == "" && v.Filter.Q == "":
		return "Parked keys", "parked"
	}
	return "Keys", "keys"
}

// keyList is GET /keys: keys newest first, a page at a time (keyset pagination).
func (c *Console) keyList(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, codeInvalidRequest, "Bad filter: "+err.Error()+".")
		return
	}
	page, err := c.cfg.Client.KeyList(r.Context(), &saga.KeyListParams{State: saga.KeyStatus(f.State), Operation: f.Operation,
		Tenant: f.Tenant, Stuck: f.Stuck, KeyPrefix: f.Q, Limit: c.cfg.PageSize, Cursor: f.Cursor})
	if errors.As(err, new(*saga.InvalidRequestError)) {
		// The filter was checked above: what KeyList refuses is the cursor.
		c.fail(w, r, http.StatusBadRequest, codeInvalidRequest, "Bad filter: cursor is not one this console gave.")
		return
	}
	if err != nil {
		c.internalError(w, r, "listing keys", err)
		return
	}
	if !wantsHTML(r) {
		out := keysJSON{Keys: make([]keyjson.Key, 0, len(page.Keys))}
		for _, k := range page.Keys {
			out.Keys = append(out.Keys, keyjson.FromKey(k))
		}
		if page.NextCursor != "" {
			out.NextCursor = &page.NextCursor
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	v := &keyListView{Filter: f, Operations: c.cfg.Client.OperationNames()}
	slices.Sort(v.Operations)
	for _, k := range page.Keys {
		v.Rows = append(v.Rows, newKeyRow(k))
	}
	if page.NextCursor != "" {
		v.Next = f.query(page.NextCursor)
	}
	if f.Cursor != "" {
		v.First = f.query("")
	}
	v.Heading, _ = v.title()
	c.render(w, r, http.StatusOK, "keys", v)
}

type keyView struct {
	keyRow
	Method, Path string
	NextAttempt  string
	CompletedAt  string
	Calls        []callRow
	Response     *saga.Response
	ResponseBody string
	History      []saga.KeyAction
	ReasonHelp   string
	CanResume    bool
	CanSettle    bool
	NoSettleHook bool
	KnownOp      bool
	Flash        *flash
	ResumeURL    string
	SettleURL    string
	CSRF         string
}

func (v *keyView) title() (string, string) { return v.Key, "" }

// keyPage is GET /keys/{tenant}/{actor}/{key}: everything show --json has.
func (c *Console) keyPage(w http.ResponseWriter, r *http.Request) {
	scope, key, ok := c.keyPath(w, r)
	if !ok {
		return
	}
	k, err := c.cfg.Client.KeyGet(r.Context(), scope, key)
	if errors.Is(err, saga.ErrKeyNotFound) {
		c.noKey(w, r, scope, key)
		return
	}
	if err != nil {
		c.internalError(w, r, "reading the key", err)
		return
	}
	if !wantsHTML(r) {
		writeJSON(w, http.StatusOK, keyjson.DetailFromKey(k))
		return
	}
	c.render(w, r, http.StatusOK, "key", c.newKeyView(r, k))
}

func (c *Console) newKeyView(r *http.Request, k *saga.Key) *keyView {
	v := &keyView{keyRow: newKeyRow(k), Method: k.Method, Path: k.Path, Response: k.Response, History: k.History,
		ReasonHelp: reasonHelp[k.ParkedReason]}
	v.ResumeURL, v.SettleURL = v.URL+"/resume", v.URL+"/settle"
	for _, call := range k.Calls {
		v.Calls = append(v.Calls, newCallRow(k.DBNow, call))
	}
	if k.Response != nil {
		v.ResponseBody = prettyBody(k.Response.Body)
	}
	if k.Status == saga.KeyStatusStarted {
		v.NextAttempt = "due now"
		if k.NextAttemptAt.After(k.DBNow) {
			v.NextAttempt = since(k.DBNow, k.NextAttemptAt)
		}
	}
	if k.CompletedAt != nil {
		v.CompletedAt = since(k.DBNow, *k.CompletedAt)
	}
	op, known := c.cfg.Client.Operation(k.Operation)
	v.KnownOp = known
	v.CanResume = known && k.Status != saga.KeyStatusCompleted
	v.CanSettle = known && k.Status == saga.KeyStatusParked && op.Settle != nil
	v.NoSettleHook = known && k.Status == saga.KeyStatusParked && op.Settle == nil
	p := who(r)
	if p.session != nil {
		v.CSRF = p.session.csrf
		v.Flash = c.auth.takeFlash(p.session, v.URL)
	}
	return v
}

// keyPath reads a key page's tenant, actor and key; a part no key can have is a 404.
func (c *Console) keyPath(w http.ResponseWriter, r *http.Request) (saga.Scope, string, bool) {
	scope := saga.Scope{Tenant: r.PathValue("tenant"), Actor: r.PathValue("actor")}
	key := r.PathValue("key")
	for _, part := range []string{scope.Tenant, scope.Actor, key} {
		if part == "" || checkText("", part, maxParam) != nil {
			c.noKey(w, r, scope, key)
			return scope, key, false
		}
	}
	return scope, key, true
}

func (c *Console) noKey(w http.ResponseWriter, r *http.Request, scope saga.Scope, key string) {
	c.fail(w, r, http.StatusNotFound, codeNotFound, "There is no key "+quote(key)+" for tenant "+quote(scope.Tenant)+" actor "+quote(scope.Actor)+".")
}

func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + strings.ToValidUTF8(s, "?") + `"`
}
