package saga

import (
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// RequestOutcome is how a request was answered, for metrics: the "outcome" label of
// pgsaga_requests_total. It is one of executed (this request's execution produced the answer),
// replayed (a stored answer, nothing executed), in_progress (409: another execution holds the
// key), mismatch (422: the key was used for another request), expired (410: the key's record was
// deleted by retention), rejected (400/401/413: refused before anything was stored), unavailable
// (503: transient, the key stays started), parked (503: the key is, or was just, parked) and
// error (500: a failure the engine cannot classify).
type RequestOutcome string

// The request outcomes (see RequestOutcome).
const (
	outcomeExecuted    RequestOutcome = "executed"    // this request's execution produced the answer
	outcomeReplayed    RequestOutcome = "replayed"    // a stored answer, nothing executed
	outcomeInProgress  RequestOutcome = "in_progress" // 409: another execution holds the key
	outcomeMismatch    RequestOutcome = "mismatch"    // 422: the key was used for another request
	outcomeExpired     RequestOutcome = "expired"     // 410: the key's record was deleted by retention
	outcomeRejected    RequestOutcome = "rejected"    // 400/401/413: refused before anything was stored
	outcomeUnavailable RequestOutcome = "unavailable" // 503: transient, the key stays started
	outcomeParked      RequestOutcome = "parked"      // 503: the key is (or was just) parked
	outcomeError       RequestOutcome = "error"       // 500: a failure the engine cannot classify
)

// requestOutcome classifies what Run or RunTx returned, by behaviour, as the HTTP handler
// answers it: the one place a request's outcome is decided for metrics.
func requestOutcome(res *Result, err error) RequestOutcome {
	switch {
	case err != nil:
		return errorOutcome(err)
	case res.Replayed:
		return outcomeReplayed
	}
	return outcomeExecuted
}

// errorOutcome is requestOutcome for an error (apart, so that an answer allocates nothing).
func errorOutcome(err error) RequestOutcome { return answerError(err).outcome }

// observed reports a request's outcome to the observer, once, where Run and RunTx return it.
func (c *Client) observed(operation string, res *Result, err error) (*Result, error) {
	c.observer.Request(operation, requestOutcome(res, err))
	return res, err
}

// Observer receives what the engine does, for metrics. Calls are made on the request path:
// implementations must be safe for concurrent use and cheap.
type Observer interface {
	// Request is called once per request (Run, RunTx, the handler's refusals before Run) with
	// its outcome. Resumes by the worker or an operator are not requests (see Resumed).
	Request(operation string, outcome RequestOutcome)
	// Step is called after each atomic phase and external call with its duration.
	Step(operation, step string, d time.Duration)
	// Call is called after each external call attempt with its outcome class.
	Call(operation, step string, outcome phases.CallOutcome, d time.Duration)
	// Resumed is called when an execution continues a key from its recovery point.
	Resumed(operation string)
	// Parked is called when a key is parked, with the reason.
	Parked(operation string, reason ParkedReason)
}

type nopObserver struct{}

func (nopObserver) Request(string, RequestOutcome)                         {}
func (nopObserver) Step(string, string, time.Duration)                     {}
func (nopObserver) Call(string, string, phases.CallOutcome, time.Duration) {}
func (nopObserver) Resumed(string)                                         {}
func (nopObserver) Parked(string, ParkedReason)                            {}
