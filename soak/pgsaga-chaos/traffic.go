package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/client"
)

// errRunOver is the cause of the clients' cancellation when the run's time is up.
var errRunOver = errors.New("the run is over")

// errParked stops the submissions of an intent whose key is parked: only an operator finishes
// it.
var errParked = errors.New("the key is parked")

// invoiceAmount is every invoice's amount; a client pays at most three payments of at most
// maxPayment on it, so no payment can exceed the balance.
const (
	invoiceAmount = 10000
	minPayment    = 500
	maxPayment    = 3000
)

// traffic is the clients: goroutines submitting intents through the client package (retries
// with the same key, full jitter, Retry-After honoured) over the recording transport.
type traffic struct {
	cfg     *Config
	intents *intents
	tr      *transport
	client  *client.Client
	tl      *timeline

	// apiKeys are the secrets of the clients' API keys, by client (a scope without a key).
	apiKeys map[scope]string

	// recent holds the latest intents' scopes, for an intent that takes the key of another
	// client's (Config.SharedKeys).
	mu     sync.Mutex
	recent []scope
}

// tenants are the run's tenants: client i belongs to tenants[i%2], and each client is an actor
// of its own, so the scopes differ by actor within a tenant and by tenant across them.
var tenants = []string{"chaos", "chaos-2"}

// clientOf is the i-th client goroutine (from 0): its tenant and actor.
func clientOf(i int) scope {
	return scope{Tenant: tenants[i%len(tenants)], Actor: fmt.Sprintf("client-%02d", i+1)}
}

func newTraffic(cfg *Config, serveURLs []string, apiKeys map[scope]string, tl *timeline) (*traffic, error) {
	reg := newIntents()
	tr, err := newTransport(serveURLs)
	if err != nil {
		return nil, err
	}
	c, err := client.NewClient(&client.Config{
		BaseURL: placeholderBase,
		HTTPClient: &http.Client{Transport: tr,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		// Until a definitive answer or the end of the run (ctx).
		MaxAttempts:    1 << 30,
		MaxElapsed:     24 * time.Hour,
		BaseDelay:      100 * time.Millisecond,
		MaxDelay:       2 * time.Second,
		RequestTimeout: 20 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	return &traffic{cfg: cfg, intents: reg, tr: tr, client: c, tl: tl, apiKeys: apiKeys}, nil
}

// run starts cfg.Clients client goroutines and returns when ctx ends and they have stopped.
func (t *traffic) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range t.cfg.Clients {
		rng := rand.New(rand.NewPCG(t.cfg.Seed, uint64(100+i)))
		c := clientOf(i)
		wg.Go(func() { t.clientLoop(ctx, c.Tenant, c.Actor, rng) })
	}
	wg.Wait()
}

// clientLoop creates an invoice, then pays one to three parts of it at once (some payments
// double-clicked), and again, until ctx ends.
func (t *traffic) clientLoop(ctx context.Context, tenant, actor string, rng *rand.Rand) {
	for ctx.Err() == nil {
		inv := t.newIntent(rng, "invoice", tenant, actor, "/invoices", map[string]any{"amount": invoiceAmount, "currency": "USD"}, false)
		a, ok := t.submit(ctx, inv, false)
		if !ok || a.status != http.StatusCreated {
			continue
		}
		invoiceID := field(a.body, "id")
		var wg sync.WaitGroup
		for range 1 + rng.IntN(3) {
			amount := minPayment + rng.IntN(maxPayment-minPayment+1)
			double := rng.Float64() < t.cfg.DoubleClick
			p := t.newIntent(rng, "payment", tenant, actor, "/payments", map[string]any{"invoice_id": invoiceID, "amount": amount}, double)
			wg.Go(func() { t.submit(ctx, p, false) })
			if double {
				delay := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
				wg.Go(func() {
					if sleepCtx(ctx, delay) {
						t.submit(ctx, p, false)
					}
				})
			}
		}
		wg.Wait()
	}
}

// newIntent creates an intent with a new key, or, with probability Config.SharedKeys, with the
// key another client (another actor, maybe of another tenant) used lately: the same key string
// in two scopes is two keys, and neither may see the other's answer.
func (t *traffic) newIntent(rng *rand.Rand, kind, tenant, actor, path string, body any, double bool) *intent {
	// Each client authenticates with its own API key, which names its tenant and actor.
	opts := &client.IntentOpts{Header: http.Header{"Authorization": {"Bearer " + t.apiKeys[scope{Tenant: tenant, Actor: actor}]}}}
	if rng.Float64() < t.cfg.SharedKeys {
		opts.Key = t.sharedKey(rng, tenant, actor)
	}
	req, err := client.NewIntent(http.MethodPost, path, body, opts)
	if err != nil {
		panic(fmt.Sprintf("the harness built an invalid intent: %v", err)) // a bug of the harness
	}
	it := &intent{kind: kind, tenant: tenant, actor: actor, req: req, double: double}
	t.intents.add(it)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.recent = append(t.recent, it.scope()); len(t.recent) > 64 {
		t.recent = t.recent[1:]
	}
	return it
}

// sharedKey returns the key of a recent intent of an actor other than actor that this actor has
// not used yet; "" (a new key) when there is none. Each actor's intents are made by one
// goroutine, so the key stays unused in its scope until its intent is added.
func (t *traffic) sharedKey(rng *rand.Rand, tenant, actor string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var others []scope
	for _, s := range t.recent {
		if s.Actor != actor && t.intents.get(scope{Tenant: tenant, Actor: actor, Key: s.Key}) == nil {
			others = append(others, s)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return others[rng.IntN(len(others))].Key
}

// submit sends it until a definitive answer (ok), or until ctx ends or a request finds its key
// parked (not ok): retrying a parked key helps nothing until an operator settles it.
func (t *traffic) submit(ctx context.Context, it *intent, drain bool) (answer, bool) {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	parked := it.watchParked()
	go func() {
		select {
		case <-parked:
			stop(errParked)
		case <-ctx.Done():
		}
	}()
	res, err := t.client.Submit(withIntent(ctx, it), it.req)
	var rejected *client.RejectedError
	if err != nil && !errors.As(err, &rejected) {
		return answer{}, false
	}
	a := answer{at: time.Now(), status: res.Status, body: res.Body, replayed: res.Replayed, drain: drain}
	it.addAnswer(a)
	return a, true
}
