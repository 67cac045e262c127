package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The statements that take and keep leases on pgsaga_key: heartbeats, takeovers, the worker's
// claims and the sweep's reservations.

// heartbeatSQL extends the lease of a key whose call is under way, and the latest moment the
// call may be sent (its journal row's deadline) with it, fenced like every write.
const heartbeatSQL = `WITH k AS (
	UPDATE pgsaga_key SET locked_until = clock_timestamp() + $5::bigint * interval '1 millisecond',
		updated_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
	RETURNING attempts, locked_until),
journal AS (
	UPDATE pgsaga_call c SET deadline = k.locked_until
	FROM k WHERE c.tenant_id = $1 AND c.actor_id = $2 AND c.key = $3 AND c.step = $6 AND c.attempt = k.attempts)
SELECT CASE WHEN k.attempts IS NULL THEN pgsaga_lease_lost($3) ELSE ` + leaseLeftSQL + ` END
FROM (VALUES (1)) AS one (x) LEFT JOIN k ON true`

// heartbeat renews the lease of a key whose call step runs, and returns the lease left.
func heartbeat(ctx context.Context, q queryer, scope Scope, key string, token uuid.UUID, lease time.Duration, step string) (time.Duration, error) {
	var leftMs int64
	err := q.QueryRow(ctx, heartbeatSQL, scope.Tenant, scope.Actor, key, token, lease.Milliseconds(), step).Scan(&leftMs)
	if err != nil {
		return 0, asLeaseLost(err)
	}
	return time.Duration(leftMs) * time.Millisecond, nil
}

// takeOverParams say which keys a takeover may take.
type takeOverParams struct {
	// ops are the operation names (with aliases) the taker can run.
	ops []string
	// due requires the key's next attempt time to have passed (a client retry, the worker);
	// an operator's resume ignores the schedule.
	due bool
	// parked also takes a parked key, with a fresh attempt budget (an operator's resume).
	parked bool
	// by records an operator's resume in the key's history.
	by string
}

// takeOverSQL takes the lease of a started key whose lease expired (and, when allowed, a parked
// key) with a new fencing token, counting the execution as an attempt, in one conditional
// UPDATE: of two takers, one wins.
const takeOverSQL = `WITH t AS (
	UPDATE pgsaga_key SET
		status = 'started', lease_token = $4,
		locked_until = clock_timestamp() + $5::bigint * interval '1 millisecond',
		attempts = attempts + 1,
		attempts_unspent = CASE WHEN status = 'failed' THEN attempts ELSE attempts_unspent END,
		parked_reason = NULL,
		updated_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND operation = ANY($6::text[])
	  AND ((status = 'started' AND (locked_until IS NULL OR locked_until <= clock_timestamp())
	        AND (NOT $7::bool OR next_attempt_at <= clock_timestamp()))
	       OR (status = 'failed' AND $8::bool))
	RETURNING ` + keyColumns + `),
acted AS (
	INSERT INTO pgsaga_key_action (tenant_id, actor_id, key, by, action)
	SELECT $1, $2, $3, $9, 'resume' FROM t WHERE $9::text IS NOT NULL)
SELECT * FROM t`

// takeOverKey takes a key over and reports true. When it cannot (the lease is live, it is not
// due, someone else took it first, the key finished or was parked, or its operation is not one
// of p.ops) it returns the key as it is and false; ErrKeyNotFound when there is no such key.
func takeOverKey(ctx context.Context, q queryer, scope Scope, key string, lease time.Duration, p *takeOverParams) (*Key, bool, error) {
	k, err := scanKey(q.QueryRow(ctx, takeOverSQL, scope.Tenant, scope.Actor, key, uuid.New(),
		lease.Milliseconds(), p.ops, p.due, p.parked, nullIfEmpty(p.by)))
	if errors.Is(err, ErrKeyNotFound) {
		existing, lookErr := lookupKey(ctx, q, scope, key)
		return existing, false, lookErr
	}
	if err != nil {
		return nil, false, fmt.Errorf("error taking over key: %w", err)
	}
	return k, true, nil
}

// dueKeysSQL selects up to $3 keys due for an execution: started, lease expired, next attempt
// time passed, not handed to a resume job, of an operation in $1; the longest waiting first. SKIP LOCKED lets concurrent
// claims and sweeps take disjoint sets without waiting on each other.
const dueKeysSQL = `SELECT tenant_id, actor_id, key FROM pgsaga_key
	WHERE status = 'started'
	  AND (locked_until IS NULL OR locked_until <= clock_timestamp())
	  AND next_attempt_at <= clock_timestamp()
	  AND (reserved_until IS NULL OR reserved_until <= clock_timestamp())
	  AND operation = ANY($1::text[])
	ORDER BY next_attempt_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED`

// claimDueSQL takes the leases of up to $3 due keys in one statement, each with its own new
// fencing token, counting an attempt each.
const claimDueSQL = `UPDATE pgsaga_key SET
		lease_token = gen_random_uuid(),
		locked_until = clock_timestamp() + $2::bigint * interval '1 millisecond',
		attempts = attempts + 1,
		updated_at = clock_timestamp()
	WHERE (tenant_id, actor_id, key) IN (` + dueKeysSQL + `)
	RETURNING ` + keyColumns

// claimDue claims up to limit due keys of ops. The caller must start every one at once: their
// leases run from now.
func claimDue(ctx context.Context, db DB, ops []string, lease time.Duration, limit int) ([]*Key, error) {
	rows, err := db.Query(ctx, claimDueSQL, ops, lease.Milliseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("error claiming due keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Key, error) { return scanKey(row) })
	if err != nil {
		return nil, fmt.Errorf("error claiming due keys: %w", err)
	}
	return keys, nil
}

// reserveDueSQL hands up to $3 due keys to resume jobs for $2 ms, so that the next sweeps do not
// list them again while their jobs wait in the queue. If a job never runs, the key falls due
// again when the reservation ends. It does not touch the lease, the schedule or the attempts: a
// client's retry may still take the key over, and the job's takeover counts the attempt.
const reserveDueSQL = `UPDATE pgsaga_key SET
		reserved_until = clock_timestamp() + $2::bigint * interval '1 millisecond'
	WHERE (tenant_id, actor_id, key) IN (` + dueKeysSQL + `)
	RETURNING tenant_id, actor_id, key`

func reserveDue(ctx context.Context, tx pgx.Tx, ops []string, hold time.Duration, limit int) ([]KeyRef, error) {
	rows, err := tx.Query(ctx, reserveDueSQL, ops, hold.Milliseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("error reserving due keys: %w", err)
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (KeyRef, error) {
		var ref KeyRef
		return ref, row.Scan(&ref.Scope.Tenant, &ref.Scope.Actor, &ref.Key)
	})
	if err != nil {
		return nil, fmt.Errorf("error reserving due keys: %w", err)
	}
	return refs, nil
}
