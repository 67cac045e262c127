package saga

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/pgsaga/pgsaga/phases"
)

// KeyStatus is where a key stands.
type KeyStatus string

const (
	// KeyStatusStarted: a request claimed the key and its operation has not finished. The
	// request itself, a retry after its lease expired, the worker or an operator moves it on.
	KeyStatusStarted KeyStatus = "started"
	// KeyStatusCompleted: the operation finished (or an operator settled it) and its response is
	// stored for replay. Final; retention GC deletes it after the operation's window.
	KeyStatusCompleted KeyStatus = "completed"
	// KeyStatusParked: parked for an operator, with a ParkedReason. Only an operator moves it
	// on: Resume (back to started) or Settle (to completed). GC never deletes it. Its stored
	// value, shown by the CLI, the console and the HTTP API, is "failed".
	KeyStatusParked KeyStatus = "failed"
)

// ParkedReason says why a key is parked (KeyStatusParked).
type ParkedReason string

const (
	// ParkedAttemptsExhausted: its executions ran out (MaxAttempts) or it is older than MaxAge.
	// Nothing was compensated: resuming it goes on from its recovery point.
	ParkedAttemptsExhausted ParkedReason = "attempts_exhausted"
	// ParkedPermanent: a step failed in a way retrying cannot fix; the compensations of the
	// phases before it ran. Settle it, or fix the cause and resume.
	ParkedPermanent ParkedReason = "permanent"
	// ParkedOutcomeUnknown: an external call may have had its effect and nothing can tell (no
	// inquiry and no idempotency keys, a key past the provider's window, a charge pending too
	// long). No compensation ran: money may have moved. Look at the provider and settle it.
	ParkedOutcomeUnknown ParkedReason = "outcome_unknown"
)

// Scope is who owns a key. It comes from authentication, never from a request body; a key from
// one scope never touches another's row.
type Scope struct {
	Tenant string
	Actor  string
}

// Key is one stored key, as the read API (KeyGet, KeyList) returns it.
type Key struct {
	Scope         Scope
	Key           string
	Operation     string
	Method        string
	Path          string
	RequestHash   []byte
	RequestBody   []byte
	Status        KeyStatus
	RecoveryPoint string
	// State holds the values the operation's steps saved (phases.Value), by name.
	State       map[string]json.RawMessage
	LockedUntil *time.Time
	// Attempts counts the key's executions (the first request, then every takeover).
	Attempts      int
	LastError     string
	NextAttemptAt time.Time
	// ParkedReason is set when Status is KeyStatusParked.
	ParkedReason ParkedReason
	Response     *Response
	CompletedAt  *time.Time
	ExpiresAt    *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// Leased is true while an execution holds the key's lease (on the database clock).
	Leased bool
	// DBNow is the database clock when the row was read.
	DBNow time.Time
	// Calls are the key's external call attempts, oldest first (KeyGet only).
	Calls []phases.CallRecord
	// History is what operators did to the key, oldest first (KeyGet only).
	History []KeyAction

	attemptsUnspent int
}

// budgetSpent is how many executions counted against the key's attempt budget.
func (k *Key) budgetSpent() int { return k.Attempts - k.attemptsUnspent }

// Stuck reports whether the key needs attention: started with an expired lease (its process
// died and no one resumed it yet), or parked.
func (k *Key) Stuck() bool {
	return k.Status == KeyStatusParked || (k.Status == KeyStatusStarted && !k.Leased)
}

// KeyAction is an operator's action on a key, from its history.
type KeyAction struct {
	At     time.Time
	By     string
	Action KeyActionKind
	// Outcome, Note and Reference are a settlement's decision (empty for a resume).
	Outcome   phases.SettleOutcome
	Note      string
	Reference string
}

// KeyActionKind is what an operator did.
type KeyActionKind string

const (
	// KeyActionResume: Resume ran the key on (pgsaga resume, the console).
	KeyActionResume KeyActionKind = "resume"
	// KeyActionSettle: Settle finished a parked key by an operator's decision.
	KeyActionSettle KeyActionKind = "settle"
)

// Response is a stored answer: status, the selected headers and the body bytes exactly as first
// sent.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Result is what running or resuming an operation produced.
type Result struct {
	// Response is the operation's answer (fresh or stored).
	Response *Response
	// Replayed is true when the response was stored by an earlier request and this request
	// executed nothing. A request that held the key's lease (the first one, or a retry that
	// took it over) is never answered as a replay, even when another execution finished the key
	// while it ran.
	Replayed bool
	// Resumed is true when this execution continued an earlier one from its recovery point.
	Resumed bool
}
