package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Every statement on pgsaga_key lives in this file.

const keyColumns = `tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, locked_until, lease_token, attempts, coalesce(last_error, ''),
	next_attempt_at, response_status, response_headers, response_body, completed_at, expires_at,
	created_at, updated_at, coalesce(locked_until > now(), false), now()`

// queryer is what the store needs: a pool, a connection or a transaction.
type queryer interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func scanKey(row pgx.Row) (*Key, error) {
	var (
		k          Key
		status     string
		state      []byte
		respStatus *int
		respHeader []byte
		respBody   []byte
	)
	err := row.Scan(&k.Scope.Tenant, &k.Scope.Actor, &k.Key, &k.Operation, &k.Method, &k.Path,
		&k.RequestHash, &k.RequestBody, &status, &k.RecoveryPoint, &state, &k.LockedUntil,
		&k.LeaseToken, &k.Attempts, &k.LastError, &k.NextAttemptAt, &respStatus, &respHeader,
		&respBody, &k.CompletedAt, &k.ExpiresAt, &k.CreatedAt, &k.UpdatedAt, &k.Leased, &k.DBNow)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrKeyNotFound
		}
		return nil, err
	}
	k.Status = KeyStatus(status)
	if err := json.Unmarshal(state, &k.State); err != nil {
		return nil, fmt.Errorf("error decoding saved state: %w", err)
	}
	if respStatus != nil {
		k.Response = &Response{Status: *respStatus, Body: respBody, Header: http.Header{}}
		if len(respHeader) > 0 {
			if err := json.Unmarshal(respHeader, &k.Response.Header); err != nil {
				return nil, fmt.Errorf("error decoding stored headers: %w", err)
			}
		}
	}
	return &k, nil
}

// ScanKey reads a row selected with KeyColumns. It is for packages (the resumer, the CLI) that
// select keys with their own conditions.
func ScanKey(row pgx.Row) (*Key, error) { return scanKey(row) }

// KeyColumns is the select list ScanKey expects.
const KeyColumns = keyColumns

func lookupKey(ctx context.Context, q queryer, scope Scope, key string) (*Key, error) {
	k, err := scanKey(q.QueryRow(ctx, `SELECT `+keyColumns+` FROM pgsaga_key
		WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`, scope.Tenant, scope.Actor, key))
	if err != nil && !errors.Is(err, ErrKeyNotFound) {
		return nil, fmt.Errorf("error looking up key: %w", err)
	}
	return k, err
}

// keyWrite is the new state of a key written by a phase, a completion or a park.
type keyWrite struct {
	status        KeyStatus
	recoveryPoint string
	state         map[string]json.RawMessage
	lease         time.Duration // renewal, for started keys
	response      *Response     // for completed keys
	retention     time.Duration // for completed keys
	lastError     string        // for failed keys
}

func (w *keyWrite) args() (state, header []byte, status *int, body []byte, err error) {
	if state, err = json.Marshal(w.state); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("error encoding saved state: %w", err)
	}
	if w.response != nil {
		if header, err = json.Marshal(w.response.Header); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("error encoding response headers: %w", err)
		}
		status, body = &w.response.Status, w.response.Body
		if body == nil {
			body = []byte{}
		}
	}
	return state, header, status, body, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

const insertKeySQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
			request_hash, request_body, status, recovery_point, state, lease_token, locked_until,
			last_error, response_status, response_headers, response_body, completed_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
			CASE WHEN $9 = 'started' THEN now() + $13 * interval '1 millisecond' END,
			$14, $15, $16, $17,
			CASE WHEN $9 = 'completed' THEN now() END,
			CASE WHEN $9 = 'completed' THEN now() + $18 * interval '1 millisecond' END)`

func insertKeyArgs(req *Request, hash []byte, token uuid.UUID, w *keyWrite) ([]any, error) {
	state, header, status, body, err := w.args()
	if err != nil {
		return nil, err
	}
	// Only a started key may be resumed, and only resuming needs the request itself: a key
	// stored finished keeps its fingerprint and its response, not a copy of the body.
	requestBody := req.Body
	if w.status != KeyStatusStarted {
		requestBody = []byte{}
	}
	return []any{req.Scope.Tenant, req.Scope.Actor, req.Key, req.Operation, req.Method, req.Path,
		hash, requestBody, string(w.status), w.recoveryPoint, state, token, w.lease.Milliseconds(),
		nullIfEmpty(w.lastError), status, header, body, w.retention.Milliseconds()}, nil
}

// insertKey claims a key that no execution has stored yet, directly in the state w describes
// (started at a recovery point, completed with its response, or failed). It reports false,
// writing nothing, when the key already exists: then the caller treats the request as a
// duplicate.
func insertKey(ctx context.Context, q queryer, req *Request, hash []byte, token uuid.UUID, w *keyWrite) (time.Time, bool, error) {
	args, err := insertKeyArgs(req, hash, token, w)
	if err != nil {
		return time.Time{}, false, err
	}
	var createdAt time.Time
	err = q.QueryRow(ctx, insertKeySQL+` ON CONFLICT DO NOTHING RETURNING created_at`, args...).Scan(&createdAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, fmt.Errorf("error claiming key: %w", err)
	}
	return createdAt, true, nil
}

const updateKeySQL = `UPDATE pgsaga_key SET
			status = $5, recovery_point = $6, state = $7,
			locked_until = CASE WHEN $5 = 'started' THEN now() + $8 * interval '1 millisecond' END,
			response_status = $9, response_headers = $10, response_body = $11,
			completed_at = CASE WHEN $5 = 'completed' THEN now() END,
			expires_at = CASE WHEN $5 = 'completed' THEN now() + $12 * interval '1 millisecond' END,
			last_error = coalesce($13, last_error),
			updated_at = now()
		WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'`

func updateKeyArgs(scope Scope, key string, token uuid.UUID, w *keyWrite) ([]any, error) {
	state, header, status, body, err := w.args()
	if err != nil {
		return nil, err
	}
	return []any{scope.Tenant, scope.Actor, key, token,
		string(w.status), w.recoveryPoint, state, w.lease.Milliseconds(),
		status, header, body, w.retention.Milliseconds(), nullIfEmpty(w.lastError)}, nil
}

// writeKey moves a started key the caller holds to the state w describes, fenced by the lease
// token: it returns ErrLeaseLost, writing nothing, when another execution took the lease over.
func writeKey(ctx context.Context, q queryer, scope Scope, key string, token uuid.UUID, w *keyWrite) error {
	args, err := updateKeyArgs(scope, key, token, w)
	if err != nil {
		return err
	}
	var one int
	err = q.QueryRow(ctx, updateKeySQL+` RETURNING 1`, args...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("error writing key: %w", err)
	}
	return nil
}

// Statements that end a phase in the same round trip as its COMMIT. Instead of writing nothing
// they raise, so the COMMIT queued after them never runs: a claim that finds the key taken
// raises a unique violation on pgsaga_key_pkey, a fenced write whose lease was taken over raises
// SQLSTATE PGS01 (pgsaga_lease_lost).
const (
	claimInPhaseSQL  = insertKeySQL + ` RETURNING created_at`
	fencedInPhaseSQL = `WITH written AS (` + updateKeySQL + ` RETURNING 1)
		SELECT CASE WHEN (SELECT count(*) FROM written) = 1 THEN 1 ELSE pgsaga_lease_lost($3) END`
)

// Errors raised by the in-phase statements.
const (
	sqlstateUniqueViolation = "23505"
	sqlstateLeaseLost       = "PGS01"
	keyPrimaryKey           = "pgsaga_key_pkey"
)

// releaseKey gives a started key's lease back after a transient failure: a client retry may take
// it over at once, the worker after delay.
func releaseKey(ctx context.Context, q queryer, scope Scope, key string, token uuid.UUID, delay time.Duration, lastError string) error {
	var one int
	err := q.QueryRow(ctx, `UPDATE pgsaga_key SET
			locked_until = now(), next_attempt_at = now() + $5 * interval '1 millisecond',
			last_error = $6, updated_at = now()
		WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
		RETURNING 1`,
		scope.Tenant, scope.Actor, key, token, delay.Milliseconds(), lastError,
	).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrLeaseLost
	}
	if err != nil {
		return fmt.Errorf("error releasing key: %w", err)
	}
	return nil
}

// takeOverKey takes the lease of a started key whose lease expired (and, with parked, of a
// failed key), with a new fencing token, when its operation is one of ops. When it cannot, it
// returns the key as it is with ErrInProgress (the lease is live, someone else took it first,
// the key finished, or its operation is not in ops), and ErrKeyNotFound when there is no key.
func takeOverKey(ctx context.Context, q queryer, scope Scope, key string, lease time.Duration, parked bool, ops []string) (*Key, error) {
	k, err := scanKey(q.QueryRow(ctx, `UPDATE pgsaga_key SET
			status = 'started', lease_token = $4, locked_until = now() + $5 * interval '1 millisecond',
			attempts = attempts + 1, updated_at = now()
		WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND operation = ANY($7::text[])
		  AND ((status = 'started' AND (locked_until IS NULL OR locked_until <= now()))
		       OR (status = 'failed' AND $6))
		RETURNING `+keyColumns,
		scope.Tenant, scope.Actor, key, uuid.New(), lease.Milliseconds(), parked, ops))
	if errors.Is(err, ErrKeyNotFound) {
		existing, lookErr := lookupKey(ctx, q, scope, key)
		if lookErr != nil {
			return nil, lookErr
		}
		return existing, ErrInProgress
	}
	if err != nil {
		return nil, fmt.Errorf("error taking over key: %w", err)
	}
	return k, nil
}
