package recovery

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/saga"
)

// Every statement the resumer runs on pgsaga_key lives in this file.

// dueCondition is what makes a key due for the resumer: started, its lease expired, its next
// attempt time passed, and an operation this resumer can run. Failed (parked) keys are never
// due: an operator resumes them.
const dueCondition = `status = 'started'
	AND (locked_until IS NULL OR locked_until <= now())
	AND next_attempt_at <= now()
	AND operation = ANY($1::text[])`

// dueKeys locks up to $3 due keys, the longest waiting first. SKIP LOCKED lets concurrent
// claims and sweeps take disjoint sets without waiting on each other.
const dueKeys = `SELECT tenant_id, actor_id, key FROM pgsaga_key
		WHERE ` + dueCondition + `
		ORDER BY next_attempt_at
		LIMIT $3
		FOR UPDATE SKIP LOCKED`

// claimSQL takes the leases of up to $3 due keys in one statement. SKIP LOCKED lets resumers
// claim disjoint batches without waiting on each other; the new lease token fences whoever
// held the key before. A claim counts as an attempt.
const claimSQL = `UPDATE pgsaga_key SET
		lease_token = gen_random_uuid(),
		locked_until = now() + $2 * interval '1 millisecond',
		attempts = attempts + 1,
		updated_at = now()
	WHERE (tenant_id, actor_id, key) IN (` + dueKeys + `)
	RETURNING ` + saga.KeyColumns

// reserveSQL hands up to $3 due keys to resume jobs: it moves their next_attempt_at $2 ms ahead
// so that the next sweeps do not list them again while their jobs wait in the queue. If a job
// never runs, the key falls due again when the reservation ends. It does not touch the lease:
// a client retry may still take the key over meanwhile.
const reserveSQL = `UPDATE pgsaga_key SET
		next_attempt_at = now() + $2 * interval '1 millisecond'
	WHERE (tenant_id, actor_id, key) IN (` + dueKeys + `)
	RETURNING tenant_id, actor_id, key`

// releaseSQL gives back the leases of claimed keys that were never resumed (a cancelled pass),
// and the attempt their claim counted. The token fences it: a key someone else took since is
// left alone.
const releaseSQL = `UPDATE pgsaga_key k SET
		locked_until = now(),
		attempts = greatest(k.attempts - 1, 1),
		updated_at = now()
	FROM unnest($1::text[], $2::text[], $3::text[], $4::uuid[]) AS c(tenant_id, actor_id, key, lease_token)
	WHERE k.tenant_id = c.tenant_id AND k.actor_id = c.actor_id AND k.key = c.key
	  AND k.lease_token = c.lease_token AND k.status = 'started'`

func (r *Resumer) claim(ctx context.Context, limit int) ([]*saga.Key, error) {
	rows, err := r.cfg.DB.Query(ctx, claimSQL, r.ops, r.lease.Milliseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("error claiming due keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*saga.Key, error) { return saga.ScanKey(row) })
	if err != nil {
		return nil, fmt.Errorf("error claiming due keys: %w", err)
	}
	return keys, nil
}

func (r *Resumer) release(ctx context.Context, keys []*saga.Key) error {
	if len(keys) == 0 {
		return nil
	}
	tenants, actors, names := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	tokens := make([]uuid.UUID, len(keys))
	for i, k := range keys {
		tenants[i], actors[i], names[i], tokens[i] = k.Scope.Tenant, k.Scope.Actor, k.Key, k.LeaseToken
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := r.cfg.DB.Exec(ctx, releaseSQL, tenants, actors, names, tokens); err != nil {
		return fmt.Errorf("error releasing unstarted claims: %w", err)
	}
	return nil
}

// ReserveDueTx reserves up to limit due keys for resume jobs, in the caller's transaction (the
// one that inserts the jobs), and returns them, oldest next attempt first. A reserved key is not
// due again for hold, so repeated sweeps do not list it while its job waits; if the job never
// runs (the transaction rolled back, the job was lost), the key falls due again after hold.
// Reserving does not take the lease: ResumeKey does.
func (r *Resumer) ReserveDueTx(ctx context.Context, tx pgx.Tx, limit int, hold time.Duration) ([]KeyRef, error) {
	rows, err := tx.Query(ctx, reserveSQL, r.ops, hold.Milliseconds(), limit)
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
