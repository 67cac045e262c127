package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// listers are the simulator's two listers: in-process and over HTTP, on the same ledger.
func listers(t *testing.T, s *sim.Simulator) map[string]gateway.Lister {
	t.Helper()
	inProcess, ok := s.Gateway().(gateway.Lister)
	require.True(t, ok, "the in-process gateway lists charges")
	return map[string]gateway.Lister{"simulator": s, "in-process": inProcess, "HTTP": newClient(t, s)}
}

// list collects every charge l yields since since, failing the test on an error.
func list(t *testing.T, l gateway.Lister, since time.Time) []gateway.Charge {
	t.Helper()
	var out []gateway.Charge
	for c, err := range l.ListCharges(context.Background(), since) {
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
}

func ids(charges []gateway.Charge) []string {
	out := make([]string, len(charges))
	for i, c := range charges {
		out[i] = c.ID
	}
	return out
}

// charge makes one charge in-process and returns it, after the clock has moved past the
// previous one's creation, so that creation times are strictly increasing.
func charge(t *testing.T, s *sim.Simulator, ref string, after time.Time) gateway.Charge {
	t.Helper()
	for !time.Now().After(after) {
	}
	c, err := s.Gateway().Send(context.Background(), chargeParams(ref, 100))
	require.NoError(t, err)
	return *c
}

func TestListChargesOldestFirstSince(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	before := time.Now()
	a := charge(t, s, "payment:list-a", time.Time{})
	b := charge(t, s, "payment:list-b", a.CreatedAt)
	c := charge(t, s, "payment:list-c", b.CreatedAt)
	for _, ch := range []gateway.Charge{a, b, c} {
		require.False(t, ch.CreatedAt.IsZero(), "every charge carries its creation time")
		require.False(t, ch.CreatedAt.Before(before))
	}
	for name, l := range listers(t, s) {
		require.Equal(t, []gateway.Charge{a, b, c}, list(t, l, time.Time{}), "%s: every charge, oldest first", name)
		require.Equal(t, []gateway.Charge{b, c}, list(t, l, b.CreatedAt), "%s: created at or after since", name)
		require.Equal(t, []gateway.Charge{c}, list(t, l, b.CreatedAt.Add(time.Nanosecond)), name)
		require.Empty(t, list(t, l, time.Now().Add(time.Hour)), name)
	}
}

// A charge held in flight (latency-before) exists only once it lands: it is not listed before,
// and once landed it is listed by when it landed, after a charge sent later that landed first.
func TestListChargesByLanding(t *testing.T) {
	t.Parallel()
	const hold = 500 * time.Millisecond
	s := sim.New(&sim.Config{Faults: sim.Faults{LatencyBefore: hold}})
	ctx, cancel := context.WithTimeout(context.Background(), hold/10)
	sent := time.Now()
	_, err := s.Gateway().Send(ctx, chargeParams("payment:held", 100))
	cancel()
	require.Error(t, err, "the caller gave up while its request was on its way")

	_, err = s.SetFaults(func(st *sim.Settings) { st.LatencyBefore = 0 })
	require.NoError(t, err)
	fast := charge(t, s, "payment:fast", time.Time{})

	for name, l := range listers(t, s) {
		require.Equal(t, []gateway.Charge{fast}, list(t, l, time.Time{}), "%s: the held charge has not landed", name)
	}
	require.Eventually(t, func() bool { return s.TotalCharges() == 2 }, 5*time.Second, 10*time.Millisecond)
	for name, l := range listers(t, s) {
		got := list(t, l, time.Time{})
		require.Equal(t, []string{fast.ID, "ch_000001"}, ids(got), "%s: oldest first by landing, not by arrival", name)
		require.False(t, got[1].CreatedAt.Before(sent.Add(hold)), "%s: created when it landed", name)
	}
}

// Each charge is listed as it stands now: a pending one is listed final once it turned.
func TestListChargesAsTheyStand(t *testing.T) {
	t.Parallel()
	s := sim.New(&sim.Config{PendingFor: 300 * time.Millisecond})
	s.PendingNext(1)
	pending := charge(t, s, "payment:list-pending", time.Time{})
	require.Equal(t, gateway.StatusPending, pending.Status)
	for name, l := range listers(t, s) {
		require.Equal(t, []gateway.Charge{pending}, list(t, l, time.Time{}), name)
	}
	require.Eventually(t, func() bool {
		c, ok := s.Get(pending.ID)
		return ok && c.Status == gateway.StatusSucceeded
	}, 5*time.Second, 10*time.Millisecond)
	turned := pending
	turned.Status = gateway.StatusSucceeded
	for name, l := range listers(t, s) {
		require.Equal(t, []gateway.Charge{turned}, list(t, l, time.Time{}), name)
	}
}

// Listing is a capability of its own: a simulator without inquiry still lists its charges.
func TestListChargesWithoutInquiry(t *testing.T) {
	t.Parallel()
	off := false
	s := sim.New(&sim.Config{Inquiry: &off})
	a := charge(t, s, "payment:no-inquiry", time.Time{})
	for name, l := range listers(t, s) {
		require.Equal(t, []gateway.Charge{a}, list(t, l, time.Time{}), name)
	}
}

// The HTTP client pages through the list (a page at a time, never the whole list at once),
// and stops asking as soon as its caller stops.
func TestClientPagesThroughTheList(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	const n = 250
	var want []string
	for i := range n {
		c, err := s.Gateway().Send(context.Background(), chargeParams(fmt.Sprintf("payment:page-%d", i), 100))
		require.NoError(t, err)
		want = append(want, c.ID)
	}
	var lists atomic.Int32
	srv := newServer(t, s)
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/charges" && r.URL.Query().Has("since") {
			lists.Add(1)
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, err := sim.NewClient(srv.URL, &sim.ClientOpts{HTTPClient: hc})
	require.NoError(t, err)

	got := list(t, c, time.Time{})
	require.Equal(t, want, ids(got), "every charge once, oldest first, across pages")
	require.Equal(t, int32(3), lists.Load(), "%d charges in pages of 100", n)

	lists.Store(0)
	for range c.ListCharges(context.Background(), time.Time{}) {
		break
	}
	require.Equal(t, int32(1), lists.Load(), "a caller that stops after one charge costs one page")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// listPage is the answer of GET /charges?since=….
type listPage struct {
	Charges []gateway.Charge `json:"charges"`
	HasMore bool             `json:"has_more"`
}

func TestListEndpoint(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	var all []gateway.Charge
	for i := range 5 {
		var after time.Time
		if i > 0 {
			after = all[i-1].CreatedAt
		}
		all = append(all, charge(t, s, fmt.Sprintf("payment:endpoint-%d", i), after))
	}
	srv := newServer(t, s)
	getList := func(query url.Values) listPage {
		t.Helper()
		status, raw := get(t, srv.URL+"/charges?"+query.Encode())
		require.Equal(t, http.StatusOK, status, string(raw))
		var p listPage
		require.NoError(t, json.Unmarshal(raw, &p), string(raw))
		return p
	}

	// Without a limit, one answer holds every charge since then.
	require.Equal(t, listPage{Charges: all}, getList(url.Values{"since": {"2000-01-01T00:00:00Z"}}))
	require.Equal(t, listPage{Charges: all[3:]},
		getList(url.Values{"since": {all[3].CreatedAt.Format(time.RFC3339Nano)}}))
	// A time with an offset, its "+" unescaped as a person typing a URL would leave it.
	status, raw := get(t, srv.URL+"/charges?since="+all[3].CreatedAt.In(time.FixedZone("", 3600)).Format(time.RFC3339Nano))
	require.Equal(t, http.StatusOK, status, string(raw))
	require.Len(t, decodeList(t, raw).Charges, 2)

	// With a limit, pages follow a cursor.
	since := "2000-01-01T00:00:00Z"
	p := getList(url.Values{"since": {since}, "limit": {"2"}})
	require.Equal(t, listPage{Charges: all[:2], HasMore: true}, p)
	p = getList(url.Values{"since": {since}, "limit": {"2"}, "starting_after": {all[1].ID}})
	require.Equal(t, listPage{Charges: all[2:4], HasMore: true}, p)
	p = getList(url.Values{"since": {since}, "limit": {"2"}, "starting_after": {all[3].ID}})
	require.Equal(t, listPage{Charges: all[4:]}, p)
}

func decodeList(t *testing.T, raw []byte) listPage {
	t.Helper()
	var p listPage
	require.NoError(t, json.Unmarshal(raw, &p), string(raw))
	return p
}

func TestListEndpointRefusesBadQueries(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	srv := newServer(t, s)
	for name, query := range map[string]string{
		"since not a time":       "since=yesterday",
		"since empty":            "since=",
		"since without a zone":   "since=2026-01-02T15:04:05",
		"reference and since":    "reference=payment:1&since=2026-01-02T15:04:05Z",
		"neither":                "",
		"limit not a number":     "since=2026-01-02T15:04:05Z&limit=ten",
		"limit zero":             "since=2026-01-02T15:04:05Z&limit=0",
		"limit too large":        "since=2026-01-02T15:04:05Z&limit=100000",
		"unknown starting_after": "since=2026-01-02T15:04:05Z&starting_after=ch_missing",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			status, raw := get(t, srv.URL+"/charges?"+query)
			require.Equal(t, http.StatusBadRequest, status, string(raw))
			var e struct{ Error, Message string }
			require.NoError(t, json.Unmarshal(raw, &e), string(raw))
			require.Equal(t, "invalid_request", e.Error)
			require.NotEmpty(t, e.Message)
		})
	}
}

// A gateway that speaks the wire format without the list endpoint cannot list.
func TestClientListUnsupported(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"not_found","message":"no such endpoint"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := sim.NewClient(srv.URL, &sim.ClientOpts{Capabilities: &gateway.Capabilities{}})
	require.NoError(t, err)
	n := 0
	for ch, err := range c.ListCharges(context.Background(), time.Now()) {
		n++
		require.Zero(t, ch)
		require.ErrorIs(t, err, gateway.ErrUnsupported)
	}
	require.Equal(t, 1, n, "one error, then the iteration ends")
}

// A listed charge whose status is none of ours is an error, never taken for one of them.
func TestClientListRefusesUnknownStatus(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"charges":[{"id":"ch_1","amount":1,"currency":"USD","reference":"r","status":"refunded"}]}`)
	}))
	t.Cleanup(srv.Close)
	c, err := sim.NewClient(srv.URL, &sim.ClientOpts{Capabilities: &gateway.Capabilities{}})
	require.NoError(t, err)
	for ch, err := range c.ListCharges(context.Background(), time.Now()) {
		require.Zero(t, ch)
		require.ErrorContains(t, err, "refunded")
	}
}

// rfc3339Fraction is an RFC 3339 time in UTC with a fraction of a second.
var rfc3339Fraction = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$`)

// Every charge the simulator answers with carries created_at, to the sub-second.
func TestCreatedAtOnTheWire(t *testing.T) {
	t.Parallel()
	s := sim.New(nil)
	srv := newServer(t, s)
	createdAt := func(raw []byte) string {
		t.Helper()
		var c struct {
			CreatedAt string `json:"created_at"`
		}
		require.NoError(t, json.Unmarshal(raw, &c), string(raw))
		return c.CreatedAt
	}
	// The nanoseconds of a creation time are zero once in a billion (and then the fraction is
	// left out): a second charge rather than a flake.
	var posted gateway.Charge
	var at string
	for i := range 2 {
		status, raw, err := post(t, srv.URL+"/charges", fmt.Sprintf(`{"amount":100,"currency":"USD","reference":"payment:wire-%d"}`, i), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status)
		at, posted = createdAt(raw), decodeCharge(t, raw)
		if posted.CreatedAt.Nanosecond() != 0 {
			break
		}
	}
	require.Regexp(t, rfc3339Fraction, at, "POST /charges")

	_, raw := get(t, srv.URL+"/charges/"+posted.ID)
	require.Equal(t, at, createdAt(raw), "GET /charges/{id}")
	_, raw = get(t, srv.URL+"/charges?reference="+url.QueryEscape(posted.Reference))
	require.Equal(t, at, createdAt(first(t, raw)), "inquiry")
	_, raw = get(t, srv.URL+"/charges?since=2000-01-01T00:00:00Z")
	require.Equal(t, at, createdAt(last(t, raw)), "list")
	_, raw = get(t, srv.URL+"/_sim/ledger")
	require.Equal(t, at, createdAt(last(t, raw)), "ledger")
}

// first and last return the first and last member of a {"charges":[…]} answer.
func first(t *testing.T, raw []byte) []byte { return charges(t, raw)[0] }

func last(t *testing.T, raw []byte) []byte {
	cs := charges(t, raw)
	return cs[len(cs)-1]
}

func charges(t *testing.T, raw []byte) []json.RawMessage {
	t.Helper()
	var body struct {
		Charges []json.RawMessage `json:"charges"`
	}
	require.NoError(t, json.Unmarshal(raw, &body), string(raw))
	require.NotEmpty(t, body.Charges, string(raw))
	return body.Charges
}
