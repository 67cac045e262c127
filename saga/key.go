package saga

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// KeyStatus is where a key stands.
type KeyStatus string

const (
	// KeyStatusStarted: a request claimed the key and its operation has not finished. The
	// request itself, a retry after its lease expired, the worker or an operator moves it on.
	KeyStatusStarted KeyStatus = "started"
	// KeyStatusCompleted: the operation finished and its response is stored for replay. Final;
	// retention GC deletes it after the operation's window.
	KeyStatusCompleted KeyStatus = "completed"
	// KeyStatusFailed: parked after its attempts ran out or a permanent failure. Only an
	// operator (pgsaga resume) moves it back to started; GC never deletes it.
	KeyStatusFailed KeyStatus = "failed"
)

// Scope is who owns a key. It comes from authentication, never from a request body; a key from
// one scope never touches another's row.
type Scope struct {
	Tenant string
	Actor  string
}

// Key is one stored key row.
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
	State         map[string]json.RawMessage
	LockedUntil   *time.Time
	LeaseToken    uuid.UUID
	Attempts      int
	LastError     string
	NextAttemptAt time.Time
	Response      *Response
	CompletedAt   *time.Time
	ExpiresAt     *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Leased is true while another process holds the key's lease (on the database clock).
	Leased bool
	// DBNow is the database clock when the row was read.
	DBNow time.Time
}

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
	// Replayed is true when the response was stored by an earlier execution.
	Replayed bool
	// Resumed is true when this execution continued an earlier one from its recovery point.
	Resumed bool
}
