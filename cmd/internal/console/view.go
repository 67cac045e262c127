package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// layoutView is what every page's layout gets: the page's own data in Page.
type layoutView struct {
	AppName string
	Title   string
	// Nav names the navigation entry to highlight.
	Nav string
	// CSRF is the session's token for the logout form; empty for a Bearer request.
	CSRF string
	// Operator is who is signed in.
	Operator string
	Page     any
}

// titled is implemented by page data that names its page.
type titled interface{ title() (title, nav string) }

// parseTemplates parses each page with the layout.
func parseTemplates() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, name := range names {
		base := strings.TrimSuffix(path.Base(name), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("error parsing template %s: %w", name, err)
		}
		out[base] = t
	}
	return out, nil
}

// render writes page name with data as HTML. It renders into a buffer first, so a template
// error is a 500 page, not half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	t := c.pages[name]
	v := &layoutView{AppName: c.cfg.Name, Page: data}
	if td, ok := data.(titled); ok {
		v.Title, v.Nav = td.title()
	}
	p := who(r)
	if p.session != nil {
		v.CSRF = p.session.csrf
	}
	v.Operator = p.operator
	var buf bytes.Buffer
	if t == nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.cfg.Logger.ErrorContext(r.Context(), "console: rendering a page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var funcs = template.FuncMap{
	"since":  since,
	"utc":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"status": statusLine,
}

func (v *errorView) title() (string, string) { return v.StatusText, "" }
func (v *loginView) title() (string, string) { return "Log in", "login" }

// errorView is an error page's data.
type errorView struct {
	Status     int
	StatusText string
	Code       string
	Message    string
}

// keyRow is a key as a row of a list, with its times relative to the database clock.
type keyRow struct {
	Tenant, Actor, Key string
	URL                string
	Operation          string
	State              string
	// Badge is the CSS class of the state: ok (completed), live (started with a lease), stuck
	// (started, lease expired), parked (failed).
	Badge string
	// Label is the state as people read it: completed, started, stuck or parked.
	Label         string
	ParkedReason  string
	Stuck         bool
	RecoveryPoint string
	Attempts      int
	// Lease says where the lease stands, for a started key.
	Lease     string
	CreatedAt time.Time
	Created   string
	UpdatedAt time.Time
	// Waiting is how long a stuck key has waited since its last change.
	Waiting   string
	LastError string
}

func newKeyRow(k *saga.Key) keyRow {
	row := keyRow{
		Tenant: k.Scope.Tenant, Actor: k.Scope.Actor, Key: k.Key, URL: keyURL(k.Scope, k.Key),
		Operation: k.Operation, State: string(k.Status), ParkedReason: string(k.ParkedReason),
		Stuck: k.Stuck(), RecoveryPoint: k.RecoveryPoint, Attempts: k.Attempts,
		CreatedAt: k.CreatedAt, Created: since(k.DBNow, k.CreatedAt), UpdatedAt: k.UpdatedAt,
		LastError: k.LastError,
	}
	switch {
	case k.Status == saga.KeyStatusCompleted:
		row.Badge, row.Label = "ok", row.State
	case k.Status == saga.KeyStatusParked:
		row.Badge, row.Label = "parked", "parked"
	case row.Stuck:
		row.Badge, row.Label = "stuck", "stuck"
	default:
		row.Badge, row.Label = "live", row.State
	}
	if row.Stuck {
		row.Waiting = age(k.DBNow.Sub(k.UpdatedAt))
	}
	if k.Status == saga.KeyStatusStarted {
		row.Lease = leaseText(k)
	}
	return row
}

// leaseText says where a started key's lease stands.
func leaseText(k *saga.Key) string {
	if k.LockedUntil == nil {
		return "no lease"
	}
	if k.Leased {
		return "held, " + age(k.LockedUntil.Sub(k.DBNow)) + " left"
	}
	return "expired " + since(k.DBNow, *k.LockedUntil)
}

// keyURL is the path of a key's page; each part is escaped, so a key with "/" or "?" in it
// stays one path segment.
func keyURL(scope saga.Scope, key string) string {
	return "/keys/" + segment(scope.Tenant) + "/" + segment(scope.Actor) + "/" + segment(key)
}

// segment escapes s as one path segment. "." and ".." are spelled with %2E, or the mux would
// clean them away.
func segment(s string) string {
	e := url.PathEscape(s)
	if strings.Trim(s, ".") == "" {
		e = strings.ReplaceAll(e, ".", "%2E")
	}
	return e
}

// since is how long before now t was: "42s ago", "3m 12s ago" ("in 5s" for a time to come).
func since(now, t time.Time) string {
	if d := now.Sub(t); d > -time.Second && d < time.Second {
		return "just now"
	}
	if t.After(now) {
		return "in " + age(t.Sub(now))
	}
	return age(now.Sub(t)) + " ago"
}

// age is d in its two largest units: "42s", "3m 12s", "5h 3m", "2d 4h".
func age(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return twoUnits(s/60, "m", s%60, "s")
	case s < 86400:
		return twoUnits(s/3600, "h", s%3600/60, "m")
	default:
		return twoUnits(s/86400, "d", s%86400/3600, "h")
	}
}

func twoUnits(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, ua)
	}
	return fmt.Sprintf("%d%s %d%s", a, ua, b, ub)
}

// statusLine is "201 Created".
func statusLine(status int) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", status, http.StatusText(status)))
}

// prettyBody is a stored body for people: indented when it is JSON, as stored otherwise.
func prettyBody(body []byte) string {
	var buf bytes.Buffer
	if json.Valid(body) && json.Indent(&buf, body, "", "  ") == nil {
		return buf.String()
	}
	return string(body)
}

// reasonHelp explains a parked reason and what to do about it.
var reasonHelp = map[saga.ParkedReason]string{
	saga.ParkedOutcomeUnknown:    "An external call may have had its effect and nothing could tell: the provider offers no inquiry and no idempotency keys, the downstream key is past the provider's window, or a charge stayed pending too long. No compensation ran: money may have moved. Look the reference up at the provider, then settle: succeeded with the provider's id, or failed.",
	saga.ParkedAttemptsExhausted: "Its attempts ran out (or it grew older than its operation's MaxAge) while failing in a way a retry could fix. Nothing was compensated. Once the cause is fixed (the provider is back), Resume goes on from its recovery point with a fresh attempt budget.",
	saga.ParkedPermanent:         "A step failed in a way retrying cannot fix, and the compensations of the phases before it ran. Fix the cause and Resume, or settle it with the outcome you decided.",
}

// callRow is one external call attempt on the key page's timeline.
type callRow struct {
	phases.CallRecord
	// Class is the CSS class of its outcome; "open" when none was recorded.
	Class string
	// Outcome says the outcome for people.
	Outcome string
	Started string
	Took    string
}

var outcomeText = map[phases.CallOutcome]string{
	phases.CallOutcomeSucceeded:    "succeeded",
	phases.CallOutcomeDeclined:     "declined",
	phases.CallOutcomeFailedBefore: "certainly not done",
	phases.CallOutcomePending:      "pending at the provider",
	phases.CallOutcomeUnknown:      "unknown: may or may not have happened",
}

func newCallRow(now time.Time, c phases.CallRecord) callRow {
	row := callRow{CallRecord: c, Class: string(c.Outcome), Outcome: outcomeText[c.Outcome], Started: since(now, c.StartedAt)}
	if c.Outcome == "" {
		row.Class, row.Outcome = "open", "no outcome recorded: in flight, or its process died (may have reached the provider)"
	}
	if c.EndedAt != nil {
		row.Took = c.EndedAt.Sub(c.StartedAt).Round(time.Millisecond).String()
	}
	return row
}
