package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

// The engine's reads of one key: the request path's narrow read (the head: what answering a
// retry needs), the whole row for a resume or an operator, and the call journal rows that
// takeovers and renewals return.

// headColumns is what answering a retry needs, and nothing more: no request body and no saved
// values (only a resume needs them, and the takeover's RETURNING reads them), and the lease and
// the next attempt as durations on the database clock.
const headColumns = `operation, method, path, request_hash, status,
	coalesce(parked_reason, ''), coalesce(last_error, ''), response_status, response_headers, response_body,
	CASE WHEN locked_until > clock_timestamp()
		THEN (extract(epoch FROM locked_until - clock_timestamp()) * 1000000)::bigint ELSE 0 END,
	(extract(epoch FROM next_attempt_at - clock_timestamp()) * 1000000)::bigint,
	recovery_point, (extract(epoch FROM clock_timestamp() - updated_at) * 1000000)::bigint`

// readHeadSQL is the request path's read of a key: one round trip, no transaction.
const readHeadSQL = `SELECT ` + headColumns + ` FROM pgsaga_key WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// keyHead is a stored key as a retry sees it.
type keyHead struct {
	Operation, Method, Path string
	RequestHash             []byte
	Status                  KeyStatus
	ParkedReason            ParkedReason
	LastError               string
	Response                *Response
	// LeaseLeft is how long an execution still holds the key's lease (on the database clock);
	// zero when none does.
	LeaseLeft time.Duration
	// NextAttemptIn is how long until the key's next attempt is due (not positive: it is due).
	NextAttemptIn time.Duration
	// RecoveryPoint is where the key stands, and SinceWrite how long ago it was last written
	// (on the database clock): what a 409's estimate starts from.
	RecoveryPoint string
	SinceWrite    time.Duration

	// scan holds what a read scans into, in the head itself, so that a read allocates only
	// what it keeps.
	scan headScan
}

// headScan are the scan targets of headColumns.
type headScan struct {
	operation, method, path pgtype.Text
	status, reason          pgtype.Text
	lastError               pgtype.Text
	respStatus              pgtype.Int4
	respHeader, respBody    []byte
	leaseLeft, nextIn       pgtype.Int8
	recoveryPoint           pgtype.Text
	sinceWrite              pgtype.Int8
	dest                    [14]any
}

// scanHead reads readHeadSQL's row into h; found is false when there is no such key.
func scanHead(row pgx.Row, h *keyHead) (found bool, err error) {
	sc := &h.scan
	sc.dest = [...]any{&sc.operation, &sc.method, &sc.path, &h.RequestHash, &sc.status, &sc.reason,
		&sc.lastError, &sc.respStatus, &sc.respHeader, &sc.respBody, &sc.leaseLeft, &sc.nextIn, &sc.recoveryPoint, &sc.sinceWrite}
	err = row.Scan(sc.dest[:]...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h.Operation, h.Method, h.Path = sc.operation.String, sc.method.String, sc.path.String
	h.Status, h.ParkedReason, h.LastError = KeyStatus(sc.status.String), ParkedReason(sc.reason.String), sc.lastError.String
	h.LeaseLeft = time.Duration(sc.leaseLeft.Int64) * time.Microsecond
	h.NextAttemptIn = time.Duration(sc.nextIn.Int64) * time.Microsecond
	h.RecoveryPoint, h.SinceWrite = sc.recoveryPoint.String, time.Duration(sc.sinceWrite.Int64)*time.Microsecond
	h.Response = nil
	if sc.respStatus.Valid {
		if h.Response, err = storedResponseOf(int(sc.respStatus.Int32), sc.respHeader, sc.respBody); err != nil {
			return false, err
		}
	}
	return true, nil
}

// storedResponseOf decodes a stored response.
func storedResponseOf(status int, header, body []byte) (*Response, error) {
	r := &Response{Status: status, Body: body}
	var err error
	if r.Header, err = decodeHeader(header); err != nil {
		return nil, fmt.Errorf("error decoding stored headers: %w", err)
	}
	return r, nil
}

// readHead reads key's head; found is false when there is no such key.
func readHead(ctx context.Context, q queryer, scope Scope, key string, h *keyHead) (found bool, err error) {
	found, err = scanHead(q.QueryRow(ctx, readHeadSQL, scope.Tenant, scope.Actor, key), h)
	if err != nil {
		return false, fmt.Errorf("error reading key: %w", err)
	}
	return found, nil
}

// keyColumns is a whole key, for the operators' reads and for the takeovers that resume it.
const keyColumns = `tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, locked_until, attempts, attempts_unspent,
	coalesce(last_error, ''), next_attempt_at, coalesce(parked_reason, ''), response_status,
	response_headers, response_body, completed_at, expires_at, created_at, updated_at,
	coalesce(locked_until > clock_timestamp(), false), clock_timestamp()`

// queryer is what the store needs: a pool, a connection or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// scanKey reads keyColumns (and, after them, extra) from row.
func scanKey(row pgx.Row, extra ...any) (*Key, error) {
	var (
		k          Key
		status     string
		reason     string
		state      []byte
		respStatus pgtype.Int4
		respHeader []byte
		respBody   []byte
	)
	dest := append([]any{&k.Scope.Tenant, &k.Scope.Actor, &k.Key, &k.Operation, &k.Method, &k.Path,
		&k.RequestHash, &k.RequestBody, &status, &k.RecoveryPoint, &state, &k.LockedUntil,
		&k.Attempts, &k.attemptsUnspent, &k.LastError, &k.NextAttemptAt, &reason,
		&respStatus, &respHeader, &respBody, &k.CompletedAt, &k.ExpiresAt, &k.CreatedAt, &k.UpdatedAt,
		&k.Leased, &k.DBNow}, extra...)
	if err := row.Scan(dest...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrKeyNotFound
		}
		return nil, err
	}
	k.Status, k.ParkedReason = KeyStatus(status), ParkedReason(reason)
	if err := json.Unmarshal(state, &k.State); err != nil {
		return nil, fmt.Errorf("error decoding saved state: %w", err)
	}
	if respStatus.Valid {
		var err error
		if k.Response, err = storedResponseOf(int(respStatus.Int32), respHeader, respBody); err != nil {
			return nil, err
		}
	}
	return &k, nil
}

const lookupKeySQL = `SELECT ` + keyColumns + ` FROM pgsaga_key
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// lookupKey reads one whole key; ErrKeyNotFound when there is none.
func lookupKey(ctx context.Context, q queryer, scope Scope, key string) (*Key, error) {
	k, err := scanKey(q.QueryRow(ctx, lookupKeySQL, scope.Tenant, scope.Actor, key))
	if err != nil && !errors.Is(err, ErrKeyNotFound) {
		return nil, fmt.Errorf("error looking up key: %w", err)
	}
	return k, err
}

// callJSON is a journal row as priorCallsJSONSQL encodes it.
type callJSON struct {
	Step          string     `json:"step"`
	Attempt       int        `json:"attempt"`
	Reference     *string    `json:"reference"`
	StartedAt     time.Time  `json:"started_at"`
	EndedAt       *time.Time `json:"ended_at"`
	Deadline      time.Time  `json:"deadline"`
	MaxInFlightMs *int64     `json:"max_in_flight_ms"`
	Outcome       *string    `json:"outcome"`
	ProviderID    *string    `json:"provider_id"`
}

// decodeCalls decodes priorCallsJSONSQL's rows, keeping those keep accepts (all when nil).
func decodeCalls(raw []byte, keep func(*callJSON) bool) ([]runstate.CallRecord, error) {
	if len(raw) == 0 || string(raw) == "[]" {
		return nil, nil
	}
	var rows []callJSON
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("error decoding the call journal: %w", err)
	}
	var out []runstate.CallRecord
	for i := range rows {
		r := &rows[i]
		if keep != nil && !keep(r) {
			continue
		}
		out = append(out, runstate.CallRecord{Step: r.Step, Attempt: r.Attempt, Reference: deref(r.Reference),
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Deadline: r.Deadline,
			MaxInFlight: time.Duration(deref(r.MaxInFlightMs)) * time.Millisecond,
			Outcome:     runstate.CallOutcome(deref(r.Outcome)), ProviderID: deref(r.ProviderID)})
	}
	return out, nil
}

// onLocalClock moves journal rows' times from the database's clock to this process's: the
// database read dbNow while the statement that returned them ran, and the process received
// them at localNow. The offset counts the statement's way back to the process as clock
// difference, which moves every time later: the safe direction for "when did an attempt stop
// sending", the one thing these times decide. This is the only place the two clocks meet.
func onLocalClock(calls []runstate.CallRecord, dbNow, localNow time.Time) []runstate.CallRecord {
	offset := localNow.Sub(dbNow)
	for i := range calls {
		c := &calls[i]
		c.StartedAt = c.StartedAt.Add(offset)
		c.Deadline = c.Deadline.Add(offset)
		if c.EndedAt != nil {
			end := c.EndedAt.Add(offset)
			c.EndedAt = &end
		}
	}
	return calls
}

// keyWrittenBySQL tells whether the key's row was last written under token.
const keyWrittenBySQL = `SELECT coalesce(lease_token = $4, false) FROM pgsaga_key
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// keyWrittenBy reports whether the key's row was last written by the execution holding token:
// for a key finished by its first phase, whether that execution's claim is the one that stored
// it. Only an execution that lost its COMMIT's answer asks.
func keyWrittenBy(ctx context.Context, q queryer, scope Scope, key string, token *pgtype.UUID) (bool, error) {
	var ours bool
	if err := q.QueryRow(ctx, keyWrittenBySQL, scope.Tenant, scope.Actor, key, token).Scan(&ours); err != nil {
		return false, fmt.Errorf("error reading the key's writer: %w", err)
	}
	return ours, nil
}
