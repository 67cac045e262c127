// Package sim is a stateful payment provider simulator with injectable faults, for tests and
// the demo. One Simulator holds every charge ever created (its ledger) for its lifetime and
// can be reached two ways with the same state and the same faults: in-process through
// Gateway, and over HTTP through Handler (served by ListenAndServe for the
// `pgsaga gateway-sim` command) with Client as the matching gateway.Gateway adapter.
//
// Wire format (see CONTRACT.md, "The gateway simulator"):
//
//	POST /charges            {"amount","currency","reference"} + optional Idempotency-Key
//	                         → 201 {"id","amount","currency","reference","status"}
//	GET  /charges?reference= → 200 {"charges":[…]}; 404 when inquiry is off
//	GET  /_sim/ledger        → 200 {"charges":[…],"by_reference":{"R":n}}
//	GET  /_sim/info          → 200 {"idempotency":bool,"inquiry":bool}
//	POST /_sim/faults        → 200 the new settings; body is any subset of them
//
// Faults apply to POST /charges in this order: fail-before (503, nothing charged), then the
// charge is created (or replayed for a known idempotency key), then latency, then
// lose-response (the connection is closed with no answer; in-process an AmbiguousError).
package sim
