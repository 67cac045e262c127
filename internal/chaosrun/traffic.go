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
	// apiKeys are the secrets of the clients' API keys, by actor.
	apiKeys map[string]string
}

func newTraffic(cfg *Config, serveURLs []string, apiKeys map[string]string, tl *timeline) (*traffic, error) {
	reg := newIntents()
	tr, err := newTransport(serveURLs, reg)
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

// actorName is the actor of the i-th client goroutine (from 0).
func actorName(i int) string { return fmt.Sprintf("client-%02d", i+1) }

// run starts cfg.Clients client goroutines and returns when ctx ends and they have stopped.
func (t *traffic) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range t.cfg.Clients {
		rng := rand.New(rand.NewPCG(t.cfg.Seed, uint64(100+i)))
		actor := actorName(i)
		wg.Go(func() { t.clientLoop(ctx, actor, rng) })
	}
	wg.Wait()
}

// clientLoop creates an invoice, then pays one to three parts of it at once (some payments
// double-clicked), and again, until ctx ends.
func (t *traffic) clientLoop(ctx context.Context, actor string, rng *rand.Rand) {
	for ctx.Err() == nil {
		inv := t.newIntent("invoice", actor, "/invoices", map[string]any{"amount": invoiceAmount, "currency": "USD"}, false)
		a, ok := t.submit(ctx, inv, false)
		if !ok || a.status != http.StatusCreated {
			continue
		}
		invoiceID := field(a.body, "id")
		var wg sync.WaitGroup
		for range 1 + rng.IntN(3) {
			amount := minPayment + rng.IntN(maxPayment-minPayment+1)
			double := rng.Float64() < t.cfg.DoubleClick
			p := t.newIntent("payment", actor, "/payments", map[string]any{"invoice_id": invoiceID, "amount": amount}, double)
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

func (t *traffic) newIntent(kind, actor, path string, body any, double bool) *intent {
	// Each actor authenticates with its own API key: the harness's intents live in memory only.
	req, err := client.NewIntent(http.MethodPost, path, body, &client.IntentOpts{
		Header: http.Header{"Authorization": {"Bearer " + t.apiKeys[actor]}},
	})
	if err != nil {
		panic(fmt.Sprintf("the harness built an invalid intent: %v", err)) // a bug of the harness
	}
	it := &intent{kind: kind, actor: actor, req: req, double: double}
	t.intents.add(it)
	return it
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
	res, err := t.client.Submit(ctx, it.req)
	var rejected *client.RejectedError
	if err != nil && !errors.As(err, &rejected) {
		return answer{}, false
	}
	a := answer{at: time.Now(), status: res.Status, body: res.Body, replayed: res.Replayed, drain: drain}
	it.addAnswer(a)
	return a, true
}
