package stripe_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeStripe is a real HTTP server speaking the part of Stripe's wire format the adapter uses
// (create, retrieve and search charges, form bodies, Idempotency-Key), with the behaviour
// stripe-mock cannot show: it keeps state, saves a key's first answer and replays it for good
// (a pending charge and a 500 included), and injects faults.
type fakeStripe struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	charges []*fakeCharge
	// answers is each idempotency key's first answer, replayed as it was.
	answers map[string]savedAnswer
	// posts counts charge creations received, replays included.
	posts int
	// faults for the next charge creations (each decremented as it applies).
	pendingNext, fail500BeforeNext, fail500AfterNext, loseNext int
	// pendingFor is how long a pending charge stays pending. Defaults to 300ms.
	pendingFor time.Duration
	// declineOver declines amounts above it (402 card_error); 0 is off.
	declineOver int64
	// latency delays every charge answer.
	latency time.Duration
}

type fakeCharge struct {
	id, currency, reference string
	amount                  int64
	status                  string
	// finalAt is when a pending charge turns succeeded.
	finalAt time.Time
}

type savedAnswer struct {
	status int
	body   []byte
	lose   bool
}

func newFakeStripe(t *testing.T) *fakeStripe {
	f := &fakeStripe{t: t, answers: map[string]savedAnswer{}, pendingFor: 300 * time.Millisecond}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/charges", f.create)
	mux.HandleFunc("GET /v1/charges/search", f.search)
	mux.HandleFunc("GET /v1/charges/{id}", f.retrieve)
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

// chargesFor counts the charges created for reference.
func (f *fakeStripe) chargesFor(reference string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.charges {
		if c.reference == reference {
			n++
		}
	}
	return n
}

// postCount counts charge creations received, replays included.
func (f *fakeStripe) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts
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
	if a.lose {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		_ = conn.Close()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// answer decides a charge creation: a replay for a known key, else a new answer (saved for the
// key, as Stripe does once an endpoint began executing).
func (f *fakeStripe) answer(key string, form url.Values) (savedAnswer, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts++
	if a, ok := f.answers[key]; ok && key != "" {
		a.lose = false
		return a, f.latency
	}
	a := f.decide(form)
	if key != "" {
		f.answers[key] = a
	}
	return a, f.latency
}

// decide makes (or refuses) the charge; f.mu is held.
func (f *fakeStripe) decide(form url.Values) savedAnswer {
	if f.fail500BeforeNext > 0 {
		f.fail500BeforeNext--
		return apiError(500, "api_error", "", "An unknown error occurred", "")
	}
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return apiError(400, "invalid_request_error", "", "Invalid positive integer", "amount")
	}
	c := &fakeCharge{
		id:        fmt.Sprintf("ch_fake%04d", len(f.charges)+1),
		amount:    amount,
		currency:  form.Get("currency"),
		reference: form.Get("metadata[reference]"),
		status:    "succeeded",
	}
	if f.declineOver > 0 && amount > f.declineOver {
		c.status = "failed"
	}
	if f.pendingNext > 0 {
		f.pendingNext--
		c.status, c.finalAt = "pending", time.Now().Add(f.pendingFor)
	}
	f.charges = append(f.charges, c)
	switch {
	case f.fail500AfterNext > 0:
		f.fail500AfterNext--
		return apiError(500, "api_error", "", "An unknown error occurred", "")
	case c.status == "failed":
		return apiError(402, "card_error", "card_declined", "Your card was declined.", "", c.id)
	}
	a := savedAnswer{status: 200, body: f.chargeJSON(c)}
	if f.loseNext > 0 {
		f.loseNext--
		a.lose = true
	}
	return a
}

func (f *fakeStripe) retrieve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.charges {
		if c.id == r.PathValue("id") {
			writeAnswer(w, savedAnswer{status: 200, body: f.chargeJSON(c)})
			return
		}
	}
	writeAnswer(w, apiError(404, "invalid_request_error", "resource_missing", "No such charge: '"+r.PathValue("id")+"'", "id"))
}

var searchQuery = regexp.MustCompile(`^metadata\['reference'\]:'((?:[^'\\]|\\.)*)'$`)

func (f *fakeStripe) search(w http.ResponseWriter, r *http.Request) {
	m := searchQuery.FindStringSubmatch(r.URL.Query().Get("query"))
	if m == nil {
		writeAnswer(w, apiError(400, "invalid_request_error", "", "unsupported query", "query"))
		return
	}
	reference := strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(m[1])
	f.mu.Lock()
	defer f.mu.Unlock()
	data := []json.RawMessage{}
	for _, c := range f.charges {
		if c.reference == reference {
			data = append(data, f.chargeJSON(c))
		}
	}
	body, _ := json.Marshal(map[string]any{"object": "search_result", "url": "/v1/charges/search", "has_more": false, "data": data})
	writeAnswer(w, savedAnswer{status: 200, body: body})
}

// chargeJSON is c as Stripe renders it now; f.mu is held.
func (f *fakeStripe) chargeJSON(c *fakeCharge) []byte {
	status := c.status
	if status == "pending" && !time.Now().Before(c.finalAt) {
		status = "succeeded"
	}
	body, err := json.Marshal(map[string]any{
		"id": c.id, "object": "charge", "amount": c.amount, "currency": c.currency, "status": status,
		"paid": status == "succeeded", "metadata": map[string]string{"reference": c.reference},
	})
	if err != nil {
		f.t.Errorf("encoding charge: %v", err)
	}
	return body
}

func apiError(status int, typ, code, message, param string, charge ...string) savedAnswer {
	e := map[string]string{"type": typ, "message": message}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	if len(charge) > 0 {
		e["charge"] = charge[0]
	}
	body, _ := json.Marshal(map[string]any{"error": e})
	return savedAnswer{status: status, body: body}
}

func writeAnswer(w http.ResponseWriter, a savedAnswer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}
