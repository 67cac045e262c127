package saga

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgconn"
)

// A database refusal of a phase's business SQL that will be the same on every retry is an
// answer, not a transient failure (a 503 on every retry would never give a definite answer):
//
//	SQLSTATE                                  answer
//	class 22 (data exception: a string        400 invalid_request: the client's data. Stored
//	  with NUL, a number out of range),       like a rejection once a phase committed; before
//	23502 not null, 23503 foreign key,        that nothing is stored, and a corrected request
//	23514 check                               may use the same key.
//	23505 unique, 23P01 exclusion             409 conflict, naming the constraint: the effect
//	                                          clashes with data already committed. Stored and
//	                                          replayed, whichever phase it hits.
//
// Every other error of business SQL is transient (503, the key stays started or unclaimed),
// among them what a failover produces: 25006 read only, class 08 connection, class 57 operator
// intervention, 40001 serialization and 40P01 deadlock, 55P03 lock not available.
// The claim's own unique violation (on pgsaga_key_pkey) is no refusal: it means a duplicate
// claimed the key first, and the request is answered from that key.

// refusal is the answer the database's refusal err gives, if it is one; stored tells whether
// it is stored even when no phase committed. A 400's message never quotes the database's own,
// which names tables and columns (the caller logs it); a conflict names the constraint, which is
// what a client can act on.
func refusal(err error) (answer *rejection, stored bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil, false
	}
	invalid := func(msg string) *rejection {
		return &rejection{status: http.StatusBadRequest, code: CodeInvalidRequest, message: msg}
	}
	switch code := pgErr.Code; {
	case len(code) == 5 && code[:2] == "22":
		return invalid("the request holds data the database cannot store (such as a NUL character in a string, or a number out of range)"), false
	case code == "23502":
		return invalid("the request lacks a value the data requires"), false
	case code == "23514":
		return invalid("the request breaks a rule of the data"), false
	case code == "23503":
		return invalid("the request refers to something that does not exist"), false
	case (code == "23505" && pgErr.ConstraintName != keyPrimaryKey) || code == "23P01":
		return &rejection{status: http.StatusConflict, code: codeConflict,
			message: fmt.Sprintf("the request conflicts with data already stored (constraint %q)", pgErr.ConstraintName)}, true
	}
	return nil, false
}

// rejection is a business outcome to store: a phase's phases.Reject, or a refusal of the
// database's.
type rejection struct {
	status        int
	code, message string
}

// rejected reads the rejection err says it is (phases.Reject), through any wrapping.
func rejected(err error) (rejection, bool) {
	var r interface {
		Rejection() (status int, code, message string)
	}
	if !errors.As(err, &r) {
		return rejection{}, false
	}
	status, code, message := r.Rejection()
	return rejection{status: status, code: code, message: message}, true
}
