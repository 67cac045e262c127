package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/client"
)

// scope names one key: the tenant and actor it belongs to, and the idempotency key itself. Two
// clients may send the same key string; each is its own key in its own scope.
type scope struct {
	Tenant string `json:"tenant"`
	Actor  string `json:"actor"`
	Key    string `json:"key"`
}

func (s scope) String() string { return s.Tenant + "/" + s.Actor + "/" + s.Key }

// intent is one decision of a client (create an invoice, pay part of it), with its key, and
// what the run saw of it.
type intent struct {
	kind   string // "invoice" or "payment"
	tenant string
	actor  string
	req    *client.Intent
	// double marks a payment submitted twice at once (a double click).
	double bool

	mu sync.Mutex
	// sent is when the first request left; zero while none did.
	sent time.Time
	// answers are the definitive answers (2xx or a non-retryable 4xx) the clients got.
	answers []answer
	// parked is set once a request found the key parked (503 operation_parked): its clients
	// stop retrying (only an operator can finish it) and retry after the drain settled it.
	parked bool
	// parkedCh is closed when a request finds the key parked; a new one is made before the
	// clients retry a settled key.
	parkedCh chan struct{}
	// firstReplayed is set when the request that started the key (the first one sent, when no
	// other was sent before its answer) was answered as a replay.
	firstReplayed bool
}

// answer is one definitive answer to an intent.
type answer struct {
	at       time.Time
	status   int
	body     []byte
	replayed bool
	// drain is set for an answer to a retry made after the run, during the drain.
	drain bool
}

func (it *intent) key() string { return it.req.Key }

func (it *intent) scope() scope { return scope{Tenant: it.tenant, Actor: it.actor, Key: it.req.Key} }

// intentContextKey carries the intent a request is sent for, from the traffic to the transport.
type intentContextKey struct{}

func withIntent(ctx context.Context, it *intent) context.Context {
	return context.WithValue(ctx, intentContextKey{}, it)
}

// intentOf is the intent a request is sent for; nil when it carries none.
func intentOf(ctx context.Context) *intent {
	it, _ := ctx.Value(intentContextKey{}).(*intent)
	return it
}

// markParked records that a request found the key parked, and stops the submissions under way.
func (it *intent) markParked() {
	it.mu.Lock()
	defer it.mu.Unlock()
	if !it.parked {
		it.parked = true
		close(it.parkedCh)
	}
}

// watchParked returns a channel closed once a request finds the key parked, from now on.
func (it *intent) watchParked() <-chan struct{} {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.parked {
		it.parked = false
		it.parkedCh = make(chan struct{})
	}
	return it.parkedCh
}

func (it *intent) markSent(at time.Time) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.sent.IsZero() {
		it.sent = at
	}
}

func (it *intent) addAnswer(a answer) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.answers = append(it.answers, a)
}

// first returns the first definitive answer; false when there is none yet.
func (it *intent) first() (answer, bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if len(it.answers) == 0 {
		return answer{}, false
	}
	return it.answers[0], true
}

func (it *intent) markFirstReplayed() {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.firstReplayed = true
}

// snapshot returns what the run saw of the intent.
func (it *intent) snapshot() (sent time.Time, answers []answer, parked bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.sent, slices.Clone(it.answers), it.parked
}

// field reads one string member of a JSON body, or "".
func field(body []byte, name string) string {
	var m map[string]any
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&m); err != nil {
		return ""
	}
	s, _ := m[name].(string)
	return s
}

// intents is the registry of every intent a run created, by scope.
type intents struct {
	mu      sync.Mutex
	byScope map[scope]*intent
	order   []*intent
}

func newIntents() *intents { return &intents{byScope: map[scope]*intent{}} }

func (r *intents) add(it *intent) {
	it.parkedCh = make(chan struct{})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byScope[it.scope()] != nil {
		panic(fmt.Sprintf("the harness made two intents under %s", it.scope())) // a bug of the harness
	}
	r.byScope[it.scope()] = it
	r.order = append(r.order, it)
}

func (r *intents) get(s scope) *intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byScope[s]
}

// all returns every intent, in creation order.
func (r *intents) all() []*intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}
