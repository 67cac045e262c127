package stripe_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStripe is a real HTTP server speaking the part of Stripe's wire format the adapter uses
// (create, retrieve, search and list PaymentIntents, retrieve a Charges API charge; form bodies,
// Idempotency-Key), with the behaviour stripe-mock cannot show: it keeps state, saves a key's
// first answer and replays it for good (a pending PaymentIntent and a 500 included), lists by
// created newest first with both cursors as Stripe does, and injects faults.
type fakeStripe struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	intents []*fakeIntent
	// charges are Charges API charges, read by id only.
	charges []*fakeCharge
	// answers is each idempotency key's first answer, replayed as it was.
	answers map[string]savedAnswer
	// posts counts PaymentIntent creations received, replays included; lists counts list
	// requests.
	posts, lists int
	// faults for the next creations (each decremented as it applies), and for list requests.
	pendingNext, fail500BeforeNext, fail500AfterNext, loseNext, hangNext, failListAfter int
	// pendingFor is how long a pending (processing) PaymentIntent stays so. Defaults to 300ms.
	pendingFor time.Duration
	// declineOver declines amounts above it (402 card_error); 0 is off.
	declineOver int64
	// latency delays every creation's answer.
	latency time.Duration
	// now is the created time of a new PaymentIntent, in Unix seconds. Defaults to the clock.
	now func() int64
}

type fakeIntent struct {
	id, currency, reference, status string
	amount, created                 int64
	// finalAt is when a processing PaymentIntent turns succeeded.
	finalAt time.Time
}

type fakeCharge struct {
	id, status, reference string
	amount                int64
	// finalAt is when a pending charge turns succeeded.
	finalAt time.Time
}

type savedAnswer struct {
	status int
	body   []byte
	lose   bool
	// hang withholds the answer until the client gives up.
	hang bool
}

func newFakeStripe(t *testing.T) *fakeStripe {
	f := &fakeStripe{t: t, answers: map[string]savedAnswer{}, pendingFor: 300 * time.Millisecond,
		now: func() int64 { return time.Now().Unix() }, failListAfter: -1}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/payment_intents", f.create)
	mux.HandleFunc("GET /v1/payment_intents", f.list)
	mux.HandleFunc("GET /v1/payment_intents/search", f.search)
	mux.HandleFunc("GET /v1/payment_intents/{id}", f.retrieve)
	mux.HandleFunc("GET /v1/charges/{id}", f.retrieveCharge)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStripe) url() string { return f.srv.URL }

// set changes the fake's settings under its lock.
func (f *fakeStripe) set(change func(*fakeStripe)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// chargesFor counts the PaymentIntents created for reference.
func (f *fakeStripe) chargesFor(reference string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, pi := range f.intents {
		if pi.reference == reference {
			n++
		}
	}
	return n
}

// postCount counts PaymentIntent creations received, replays included.
func (f *fakeStripe) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts
}

// listCount counts list requests received.
func (f *fakeStripe) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

// add creates a PaymentIntent directly (not through the API) and returns its id.
func (f *fakeStripe) add(created int64, reference, status string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	pi := &fakeIntent{id: fmt.Sprintf("pi_fake%04d", len(f.intents)+1), amount: 100, currency: "usd",
		reference: reference, status: status, created: created}
	f.intents = append(f.intents, pi)
	return pi.id
}

// setStatus changes a PaymentIntent's status, as Stripe moves it along.
func (f *fakeStripe) setStatus(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pi := range f.intents {
		if pi.id == id {
			pi.status = status
		}
	}
}

// addCharge creates a Charges API charge directly and returns its id.
func (f *fakeStripe) addCharge(reference, status string, pendingFor time.Duration) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &fakeCharge{id: fmt.Sprintf("ch_fake%04d", len(f.charges)+1), amount: 100, reference: reference, status: status}
	if status == "pending" {
		c.finalAt = time.Now().Add(pendingFor)
	}
	f.charges = append(f.charges, c)
	return c.id
}

func (f *fakeStripe) create(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	a, latency := f.answer(r.Header.Get("Idempotency-Key"), r.PostForm)
	if latency > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(latency):
		}
	}
	if a.hang {
		<-r.Context().Done()
		return
	}
	if a.lose {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		_ = conn.Close()
		return
	}
	writeAnswer(w, a)
}

// answer decides a creation: a replay for a known key, else a new answer (saved for the key,
// as Stripe does once an endpoint began executing).
func (f *fakeStripe) answer(key string, form url.Values) (savedAnswer, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	if a, ok := f.answers[key]; ok && key != "" {
		a.lose, a.hang = false, false
		return a, f.latency
	}
	a := f.decide(form)
	if key != "" {
		f.answers[key] = a
	}
	return a, f.latency
}

// decide creates and confirms the PaymentIntent (or refuses it); f.mu is held.
func (f *fakeStripe) decide(form url.Values) savedAnswer {
	if f.fail500BeforeNext > 0 {
		f.fail500BeforeNext--
		return apiError(500, "api_error", "", "An unknown error occurred", "", nil)
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return apiError(400, "invalid_request_error", "", "Invalid positive integer", "amount", nil)
	}
	if form.Get("confirm") != "true" || form.Get("payment_method") == "" {
		return apiError(400, "invalid_request_error", "", "this fake only creates and confirms at once", "confirm", nil)
	}
	pi := &fakeIntent{
		id:        fmt.Sprintf("pi_fake%04d", len(f.intents)+1),
		amount:    amount,
		currency:  form.Get("currency"),
		reference: form.Get("metadata[reference]"),
		status:    "succeeded",
		created:   f.now(),
	}
	if f.declineOver > 0 && amount > f.declineOver {
		pi.status = "requires_payment_method"
	}
	if f.pendingNext > 0 {
		f.pendingNext--
		pi.status, pi.finalAt = "processing", time.Now().Add(f.pendingFor)
	}
	f.intents = append(f.intents, pi)
	switch {
	case f.fail500AfterNext > 0:
		f.fail500AfterNext--
		return apiError(500, "api_error", "", "An unknown error occurred", "", nil)
	case pi.status == "requires_payment_method":
		return apiError(402, "card_error", "card_declined", "Your card was declined.", "", f.intentJSON(pi))
	}
	a := savedAnswer{status: 200, body: f.intentJSON(pi)}
	switch {
	case f.hangNext > 0:
		f.hangNext--
		a.hang = true
	case f.loseNext > 0:
		f.loseNext--
		a.lose = true
	}
	return a
}

func (f *fakeStripe) retrieve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, pi := range f.intents {
		if pi.id == r.PathValue("id") {
			writeAnswer(w, savedAnswer{status: 200, body: f.intentJSON(pi)})
			return
		}
	}
	writeAnswer(w, apiError(404, "invalid_request_error", "resource_missing", "No such payment_intent: '"+r.PathValue("id")+"'", "intent", nil))
}

func (f *fakeStripe) retrieveCharge(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.charges {
		if c.id == r.PathValue("id") {
			status := c.status
			if status == "pending" && !time.Now().Before(c.finalAt) {
				status = "succeeded"
			}
			body, _ := json.Marshal(map[string]any{"id": c.id, "object": "charge", "amount": c.amount, "currency": "usd",
				"status": status, "created": 1700000000, "metadata": map[string]string{"reference": c.reference}})
			writeAnswer(w, savedAnswer{status: 200, body: body})
			return
		}
	}
	writeAnswer(w, apiError(404, "invalid_request_error", "resource_missing", "No such charge: '"+r.PathValue("id")+"'", "id", nil))
}

var searchQuery = regexp.MustCompile(`^metadata\['reference'\]:'((?:[^'\\]|\\.)*)'$`)

func (f *fakeStripe) search(w http.ResponseWriter, r *http.Request) {
	m := searchQuery.FindStringSubmatch(r.URL.Query().Get("query"))
	if m == nil {
		writeAnswer(w, apiError(400, "invalid_request_error", "", "unsupported query", "query", nil))
		return
	}
	reference := strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[1])
	f.mu.Lock()
	defer f.mu.Unlock()
	data := []json.RawMessage{}
	for _, pi := range f.intents {
		if pi.reference == reference {
			data = append(data, f.intentJSON(pi))
		}
	}
	body, _ := json.Marshal(map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "has_more": false, "data": data})
	writeAnswer(w, savedAnswer{status: 200, body: body})
}

// list answers GET /v1/payment_intents as Stripe does: newest first (by created, then by
// creation), filtered by created[gte] and created[lt], a page of limit (default 10, at most 100)
// at the top of the list, after starting_after (older) or before ending_before (newer: the page
// next to the cursor, still newest first), has_more when more lie that way.
func (f *fakeStripe) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.failListAfter == 0 {
		writeAnswer(w, apiError(500, "api_error", "", "An unknown error occurred", "", nil))
		return
	}
	if f.failListAfter > 0 {
		f.failListAfter--
	}
	bad := func(param, why string) { writeAnswer(w, apiError(400, "invalid_request_error", "", why, param, nil)) }
	limit := 10
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > 100 {
			bad("limit", "limit must be in [1, 100]")
			return
		}
		limit = n
	}
	bound := func(key string) (int64, bool) {
		n, err := strconv.ParseInt(q.Get(key), 10, 64)
		return n, q.Has(key) && err == nil
	}
	if q.Has("created") {
		bad("created", "this fake takes created[gte] and created[lt] only")
		return
	}
	if q.Has("starting_after") && q.Has("ending_before") {
		bad("ending_before", "starting_after and ending_before are mutually exclusive")
		return
	}
	seq := map[*fakeIntent]int{}
	for i, pi := range f.intents {
		seq[pi] = i
	}
	newest := func(a, b *fakeIntent) int {
		return cmp.Or(cmp.Compare(b.created, a.created), cmp.Compare(seq[b], seq[a]))
	}
	var all []*fakeIntent
	for _, pi := range f.intents {
		if gte, ok := bound("created[gte]"); ok && pi.created < gte {
			continue
		}
		if lt, ok := bound("created[lt]"); ok && pi.created >= lt {
			continue
		}
		all = append(all, pi)
	}
	slices.SortFunc(all, newest)
	cursorOf := func(id string) *fakeIntent {
		for _, pi := range f.intents {
			if pi.id == id {
				return pi
			}
		}
		return nil
	}
	var page []*fakeIntent
	more := false
	switch {
	case q.Has("ending_before"):
		cursor := cursorOf(q.Get("ending_before"))
		if cursor == nil {
			bad("ending_before", "no such object")
			return
		}
		var newer []*fakeIntent
		for _, pi := range all {
			if newest(pi, cursor) < 0 {
				newer = append(newer, pi)
			}
		}
		page, more = newer[max(len(newer)-limit, 0):], len(newer) > limit
	case q.Has("starting_after"):
		cursor := cursorOf(q.Get("starting_after"))
		if cursor == nil {
			bad("starting_after", "no such object")
			return
		}
		var older []*fakeIntent
		for _, pi := range all {
			if newest(pi, cursor) > 0 {
				older = append(older, pi)
			}
		}
		page, more = older[:min(limit, len(older))], len(older) > limit
	default:
		page, more = all[:min(limit, len(all))], len(all) > limit
	}
	data := []json.RawMessage{}
	for _, pi := range page {
		data = append(data, f.intentJSON(pi))
	}
	body, _ := json.Marshal(map[string]any{"object": "list", "url": "/v1/payment_intents", "has_more": more, "data": data})
	writeAnswer(w, savedAnswer{status: 200, body: body})
}

// intentJSON is pi as Stripe renders it now; f.mu is held.
func (f *fakeStripe) intentJSON(pi *fakeIntent) []byte {
	status := pi.status
	if status == "processing" && !pi.finalAt.IsZero() && !time.Now().Before(pi.finalAt) {
		status = "succeeded"
	}
	m := map[string]any{
		"id": pi.id, "object": "payment_intent", "amount": pi.amount, "currency": pi.currency, "status": status,
		"created": pi.created, "metadata": map[string]string{"reference": pi.reference},
	}
	if status == "requires_payment_method" {
		m["last_payment_error"] = map[string]any{"type": "card_error", "code": "card_declined", "message": "Your card was declined."}
	}
	body, err := json.Marshal(m)
	if err != nil {
		f.t.Errorf("encoding PaymentIntent: %v", err)
	}
	return body
}

// apiError is Stripe's error answer; intent, when set, is the PaymentIntent it carries.
func apiError(status int, typ, code, message, param string, intent json.RawMessage) savedAnswer {
	e := map[string]any{"type": typ, "message": message}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	if intent != nil {
		e["payment_intent"] = intent
	}
	body, _ := json.Marshal(map[string]any{"error": e})
	return savedAnswer{status: status, body: body}
}

func writeAnswer(w http.ResponseWriter, a savedAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}
