// Package sim is a stateful payment provider simulator with injectable faults, for tests and
// the demo. One Simulator holds every charge ever created (its ledger) for its lifetime and
// can be reached two ways with the same state and the same faults: in-process through
// Gateway, and over HTTP through Handler (served by ListenAndServe for the
// `pgsaga gateway-sim` command) with Client as the matching gateway.Gateway adapter.
//
// Wire format:
//
//	POST /charges            {"amount","currency","reference"} + optional Idempotency-Key
//	                         → 201 {"id","amount","currency","reference","status","created_at"}
//	                           status succeeded, declined or pending
//	                         → 503 {"error":"not_processed",…}: fail-before, nothing charged
//	GET  /charges?reference= → 200 {"charges":[…]} as they stand; 404 when inquiry is off
//	GET  /charges?since=T    → 200 {"charges":[…],"has_more":false}: every charge landed since T
//	     [&limit=N]            (RFC 3339), oldest first, as they stand; with limit, a page of
//	     [&starting_after=ID]  at most N (1..1000) after the charge ID, has_more when others follow
//	GET  /charges/{id}       → 200 the charge as it stands; 404 {"error":"not_found"}
//	GET  /_sim/ledger        → 200 {"charges":[…],"by_reference":{"R":n}}
//	GET  /_sim/info          → 200 {"idempotency":bool,"inquiry":bool,"max_in_flight_ms":n}
//	POST /_sim/faults        → 200 the new settings; body is any subset of them
//
// With Config.ControlToken the /_sim/ paths answer 401 {"error":"unauthenticated"} to a request
// without "Authorization: Bearer <token>"; /charges stays open.
//
// Errors are {"error":code,"message":text}; a malformed query (a since that is not an RFC 3339
// time, reference and since together, neither) is 400 invalid_request. Every charge carries
// created_at, when it landed (RFC 3339 in UTC, to the nanosecond), and the list is ordered by
// it: a charge held by latency-before is listed only once it lands, and then after every charge
// that landed before it, whenever it was sent.
//
// Listing (GET /charges?since=, Simulator.ListCharges, Client.ListCharges, and the in-process
// Gateway, all gateway.Lister) is a capability of its own, as a provider's list of charges is:
// it works with inquiry off. Reconciliation reads it to find charges no completed key accounts
// for, and a provider without inquiry by reference (Stripe's search is not authoritative) still
// lists what it created.
//
// Faults apply to POST /charges in this order: latency-before (the request is held before it
// reaches the ledger, whether or not its caller still waits), fail-before (503, nothing
// charged), then the charge is created (pending with probability Pending, final after
// PendingFor) or the first answer replayed for a known idempotency key (a pending answer is
// replayed pending, as Stripe does), then latency, then lose-response (the connection is closed
// with no answer; in-process gateway.Unknown). A request HangNext picked gets no answer
// at all until its caller gives up: only a per-request timeout ends it.
//
// The in-process Gateway declares Config.RequestTimeout as its per-request timeout, Client
// ClientOpts.RequestTimeout (both 5s unless set): gateway.Execute gives up a request that takes
// longer and resolves it within the same call.
package sim
