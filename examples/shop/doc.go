// Package shop is pgsaga's second example service, from the seed's other effects: stock counts
// posted once, orders re-validated at submission and held for review rather than repriced, and
// shipments that text the customer through an SMS provider without idempotency keys and notify
// a partner by webhook. It is a library package (New, Handler) and a runnable service
// (go run ./examples/shop/cmd/shop).
//
// # API
//
// Every request carries its scope (the tenant and the actor) from authentication: Handler takes
// a saga.ScopeFunc, and saga.HeaderScope (X-Tenant-ID, X-Actor-ID) stands in for one in tests and
// local runs. Every POST requires an Idempotency-Key, and follows the outcomes every pgsaga POST
// follows (replay, 422 idempotency_key_reused, 409 request_in_progress, 400, 503 with
// Retry-After). Errors are problem details (application/problem+json) with a stable "error".
//
//	endpoint                            body                                            success
//	POST /locations/{location}/counts   {"sku","day":"YYYY-MM-DD","quantity"}           201 {"id","location","sku","day","quantity"}
//	POST /orders                        {"sku","quantity","unit_price","phone"}         201 {"id","sku","quantity","unit_price","current_price","total","phone","status":"accepted"}
//	POST /orders/{id}/ship              {}                                              201 {"order_id","status":"shipped","message_id","message_status","delivery_id"}
//	GET  /orders/{id}                                                                   200 the order; status accepted, held or shipped
//	PUT  /products/{sku}                {"price"}                                       200 {"sku","price"} (no key: a PUT is idempotent)
//
// Outcomes of the shop's own, each stored with the key and replayed:
//
//	situation                                                status  error
//	a second intent counts the same location, sku and day    409     conflict (the engine's, naming shop_stock_count_once_per_day)
//	the order's unit_price is not the price list's           409     price_changed, with order_id, sku, submitted_price, current_price
//	no such product or order (for this tenant)               404     not_found
//	shipping an order held for review                        409     order_held
//	shipping an order that shipped under another key         409     order_already_shipped
//
// # What each operation guarantees
//
// post_stock_count is one transaction: the claim of the key, the count and the answer commit
// together. The count's id derives from the intent (phases.IntentID with prefix "cnt"), and the
// unique constraint on (tenant, location, sku, day) refuses a second intent's count; the engine
// answers that refusal with a stored 409 conflict, which the second intent's retries replay.
//
// submit_order is one transaction. The order carries the client's unit price, checked against
// the price list under a row lock. A different price holds the order: its row is written with
// status held, order.held is emitted through the outbox in the same transaction, and the answer
// is 409 price_changed with the current price (phases.Run.RespondError: an error answer that
// keeps the phase's writes). The order is never repriced: the database refuses an order whose
// status does not match its prices. The answer is stored with the key, so a retry replays it
// byte for byte whatever the price list says by then, also once the price is back at the one
// the client sent.
//
// ship_order is phased. Its first transaction moves an accepted order to shipped and emits
// order.shipped in that transaction. The customer_texted call sends one text through
// sms.Send: the provider has no idempotency keys, so after a lost answer or a crash the engine's
// journal says the text may have gone, and the call asks the provider by reference before it
// sends again, taking the message it finds. The partner_notified call delivers the shipment to
// the partner with webhook.Deliver, under the same key on every attempt, which the partner
// de-duplicates. The last transaction records the shipment and answers. Every step reads the
// order's id with phases.Run.PathValue("id"): the key keeps the route's values, so the worker's
// resume reads them too.
//
// The offline client (package client) queues orders in a file while the till has no network
// and submits them, each with the key made when it was queued, once it reconnects; an order
// held for review is answered 409 and stays in the queue as held, for a person to look at.
//
// Crash tests (saga/sagatest.Check) crash every operation before and after each of its steps and
// after its answer, recover it by the client's retry and by the worker, and find each effect
// once: the count, the order, the held order and its event, the shipped order, its event, one
// text and one partner delivery.
//
// # Running it
//
//	go run ./examples/shop/cmd/shop --database-url postgres://…  # migrates, then serves on :8080
//
// The command wires a whole process in the order that has no cycle: a pool, the migrations,
// the outbox (worker.NewOutbox, which needs nothing else), the service whose operations emit
// through it, a worker built from the service's saga client (resumes, outbox deliveries,
// retention), the HTTP server; and it shuts down the other way (stop taking requests, let those
// in flight finish, then stop the worker, then close the pool). Its SMS provider is the in-process simulator (gateway/sms/smssim) and its partner a
// simulated endpoint it serves itself unless --partner-url names one.
//
// Its tests run on a throwaway database from saga/sagatest (NewDB), or on the server of
// PGSAGA_TEST_DATABASE_URL: go test ./examples/shop/...
package shop
