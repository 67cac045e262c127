// Package webhook is the effect of delivering a JSON document to a partner's endpoint that
// de-duplicates by an idempotency key: its request (Params), the partner's acknowledgement
// (Delivery), the engine's knowledge of the kind (Kind), Client, the HTTP adapter, and Deliver,
// which delivers once by the rules every effect shares (gateway.Execute).
//
// The key travels as the Idempotency-Key header. A partner cannot be asked what it received,
// so after a lost answer or a crash Deliver sends the same key again, and the partner answers
// with its first delivery instead of taking a second; a key older than the partner's window
// (Config.KeyRetention) is never re-sent: the engine parks it for an operator.
//
// Every delivery is bounded by the client's per-request timeout (Config.RequestTimeout), so a
// partner that never answers costs one timeout, and the key is sent again within the same call.
//
// gateway/webhook/webhooksim is a partner endpoint with the faults of gateway/effectsim (lost
// answers, fail-before, latency before a delivery lands), for tests and examples:
//
//	partner := webhooksim.New(nil)
//	srv := httptest.NewServer(partner)
//	client, _ := webhook.New(&webhook.Config{URL: srv.URL})
//	d, err := webhook.Deliver(ctx, run, client, webhook.Params{Key: run.Reference(), Body: body}, nil)
//	// one delivery per key: partner.Count(run.Reference()) == 1
package webhook
