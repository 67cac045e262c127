package perflab

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/saga"
)

// Schema edits, appended to today's DDL so that each reads as what it changes.
const (
	dropTrigger  = "DROP TRIGGER pgsaga_key_done ON pgsaga_key;\n"
	dropCreated  = "DROP INDEX pgsaga_key_created_idx;\n"
	dropFailed   = "DROP INDEX pgsaga_key_failed_idx;\n"
	dropExpires  = "DROP INDEX pgsaga_key_expires_idx;\n"
	dropChecks   = "ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_identity, DROP CONSTRAINT pgsaga_key_state_machine;\n"
	fillfactor80 = "ALTER TABLE pgsaga_key SET (fillfactor = 80);\n"
	// minimalIndexes keeps the primary key and the resumer's partial index only.
	minimalIndexes = dropCreated + dropFailed + dropExpires
)

// Checks: one of the two CHECK constraints dropped, or the identity's moved to domains (a
// domain's check expression is read once per backend into the type cache; a table's CHECK is
// read from its stored text on every statement that writes the table).
const (
	dropIdentityCheck = "ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_identity;\n"
	dropStateCheck    = "ALTER TABLE pgsaga_key DROP CONSTRAINT pgsaga_key_state_machine;\n"
	identityDomains   = dropChecks + `CREATE DOMAIN pgsaga_scope_id AS text CHECK (length(VALUE) BETWEEN 1 AND 64);
CREATE DOMAIN pgsaga_idempotency_key AS text CHECK (length(VALUE) BETWEEN 8 AND 255);
ALTER TABLE pgsaga_key ALTER COLUMN tenant_id TYPE pgsaga_scope_id, ALTER COLUMN actor_id TYPE pgsaga_scope_id,
  ALTER COLUMN key TYPE pgsaga_idempotency_key;
`
)

// recommendedDDL is today's table with only the indexes the request path and the resumer need,
// and no NOTIFY trigger (a waiter asks for its notification instead).
func recommendedDDL() string { return todayDDL() + dropTrigger + minimalIndexes }

// withRead returns ks with another read statement.
func withRead(ks keyStore, read string) keyStore { ks.read = read; return ks }

// keyColumnsNoBody is saga.KeyColumns with the request body left out (it is only needed to
// resume, and can be read then).
var keyColumnsNoBody = strings.Replace(saga.KeyColumns, "request_body", "''::bytea", 1)

// companionBody keeps the request body out of the key row, in pgsaga_request, written by the
// claim in the same statement and read only to resume.
func companionBody() keyStore {
	ks := lean("body in pgsaga_request", recommendedDDL()+`
ALTER TABLE pgsaga_key DROP COLUMN request_body;
CREATE TABLE pgsaga_request (tenant_id text NOT NULL, actor_id text NOT NULL, key text NOT NULL, body bytea NOT NULL,
  PRIMARY KEY (tenant_id, actor_id, key));
`)
	ks.read = `SELECT ` + keyColumnsNoBody + ` FROM pgsaga_key WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`
	ks.claimStarted = func(r *kreq) (string, []any) {
		return `WITH k AS (INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
					request_hash, recovery_point, state, lease_token, locked_until)
				VALUES ($1, $2, $3, $4, $5, $6, $7, 'created', $9, $10, clock_timestamp() + $11 * interval '1 millisecond')
				RETURNING tenant_id, actor_id, key, created_at),
			b AS (INSERT INTO pgsaga_request SELECT tenant_id, actor_id, key, $8 FROM k)
			SELECT created_at FROM k`,
			[]any{r.tenant, r.actor, r.key, r.op, r.method, r.path, r.hash, r.body, r.state, pgUUID(r.token), int64(ms)}
	}
	claimCompleted := ks.claimCompleted
	ks.claimCompleted = func(r *kreq) (string, []any) {
		sql, args := claimCompleted(r)
		return edit(sql, "request_hash, request_body,", "request_hash,", "$7, '',", "$7,"), args
	}
	return ks
}

// inflight keeps started (and parked) keys' lease and schedule in pgsaga_inflight, so that the
// key row has no index on a column a phase changes: its completion is a HOT update, and the
// in-flight row is deleted.
func inflight(name string, extra string) keyStore {
	ks := lean(name, todayDDL()+dropTrigger+minimalIndexes+"DROP INDEX pgsaga_key_resumable_idx;\n"+
		"CREATE INDEX pgsaga_key_created_idx ON pgsaga_key (created_at);\n"+extra+`
CREATE TABLE pgsaga_inflight (tenant_id text NOT NULL, actor_id text NOT NULL, key text NOT NULL,
  lease_token uuid NOT NULL, locked_until timestamptz, next_attempt_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, actor_id, key));
CREATE INDEX pgsaga_inflight_due_idx ON pgsaga_inflight (next_attempt_at);
`)
	ks.read = `SELECT ` + strings.NewReplacer("tenant_id, actor_id, key,", "k.tenant_id, k.actor_id, k.key,",
		"locked_until, lease_token", "i.locked_until, coalesce(i.lease_token, k.lease_token)",
		"next_attempt_at", "coalesce(i.next_attempt_at, k.next_attempt_at)",
		"coalesce(locked_until > now(), false)", "coalesce(i.locked_until > now(), false)").Replace(saga.KeyColumns) + `
		FROM pgsaga_key k LEFT JOIN pgsaga_inflight i USING (tenant_id, actor_id, key)
		WHERE k.tenant_id = $1 AND k.actor_id = $2 AND k.key = $3`
	ks.claimStarted = func(r *kreq) (string, []any) {
		return `WITH k AS (INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
					request_hash, request_body, recovery_point, state, lease_token)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'created', $9, $10)
				RETURNING tenant_id, actor_id, key, created_at),
			i AS (INSERT INTO pgsaga_inflight (tenant_id, actor_id, key, lease_token, locked_until)
				SELECT tenant_id, actor_id, key, $10, clock_timestamp() + $11 * interval '1 millisecond' FROM k)
			SELECT created_at FROM k`,
			[]any{r.tenant, r.actor, r.key, r.op, r.method, r.path, r.hash, r.body, r.state, pgUUID(r.token), int64(ms)}
	}
	ks.complete = func(r *kreq) (string, []any) {
		return `WITH f AS (DELETE FROM pgsaga_inflight
					WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 RETURNING 1),
				w AS (UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished',
					state = $5, response_status = $6, response_headers = $7,
					response_body = $8, completed_at = now(), expires_at = now() + $9 * interval '1 millisecond',
					updated_at = now()
				WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND EXISTS (SELECT FROM f)
				RETURNING 1)
			SELECT 1 / count(*) FROM w`,
			[]any{r.tenant, r.actor, r.key, pgUUID(r.token), r.state, int32(201), r.respHeader, r.respBody, int64(retainMs)}
	}
	return ks
}

// notifyWhenWaited has a waiters flag a duplicate sets (before it LISTENs) when it decides to
// wait; the completion notifies only when the flag is set, in its own statement.
func notifyWhenWaited() keyStore {
	ks := lean("NOTIFY only when a waiter set a flag", recommendedDDL()+
		"ALTER TABLE pgsaga_key ADD COLUMN waiters boolean NOT NULL DEFAULT false;\n")
	ks.complete = func(r *kreq) (string, []any) {
		return `WITH written AS (UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished',
					state = $5, locked_until = NULL, response_status = $6, response_headers = $7,
					response_body = $8, completed_at = now(), expires_at = now() + $9 * interval '1 millisecond',
					updated_at = now()
				WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
				RETURNING tenant_id, actor_id, key, waiters)
			SELECT 1 / count(*) FROM (SELECT CASE WHEN waiters THEN
				pg_notify('pgsaga_key_done', json_build_array(tenant_id, actor_id, key)::text) END FROM written) n`,
			[]any{r.tenant, r.actor, r.key, pgUUID(r.token), r.state, int32(201), r.respHeader, r.respBody, int64(retainMs)}
	}
	return ks
}

// notifyAlways notifies in the completion's statement, without a trigger: what NOTIFY itself
// costs at commit, apart from the trigger.
func notifyAlways() keyStore {
	ks := notifyWhenWaited()
	ks.name = "NOTIFY in the statement, always"
	complete := ks.complete
	ks.complete = func(r *kreq) (string, []any) {
		sql, args := complete(r)
		return edit(sql, "CASE WHEN waiters THEN", "CASE WHEN true THEN"), args
	}
	return ks
}

// todayUUIDFixed is today's statements with the token passed as pgtype.UUID.
func todayUUIDFixed() keyStore {
	ks := today()
	ks.name = "today, token as pgtype.UUID"
	for _, f := range []*func(*kreq) (string, []any){&ks.claimStarted, &ks.claimCompleted, &ks.complete} {
		orig := *f
		*f = func(r *kreq) (string, []any) {
			sql, args := orig(r)
			for i, a := range args {
				if a == any(r.token) {
					args[i] = pgUUID(r.token)
				}
			}
			return sql, args
		}
	}
	return ks
}

// The call journal's table, as the protocol issue describes it.
const callDDL = `
CREATE TABLE pgsaga_call (
    tenant_id   text        NOT NULL,
    actor_id    text        NOT NULL,
    key         text        NOT NULL,
    step        text        NOT NULL,
    attempt     integer     NOT NULL,
    reference   text        NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    deadline    timestamptz NOT NULL,
    ended_at    timestamptz,
    outcome     text,
    provider_id text,
    PRIMARY KEY (tenant_id, actor_id, key, step, attempt)
);
`

// journal is the recommended key store with one journal row per request: inserted by the claim
// (the phase before the call renews the lease and carries it) and completed by the completion.
// mode: "cte" (in the key's statement), "pipeline" (a second statement in the same round trip,
// one implicit transaction), "insert-only" (the outcome is a second row, in pgsaga_call_end),
// "fk" (cte, with a foreign key to the key), "implied" (cte insert; a success is implied by the
// completion, which does not touch the journal).
func journal(mode string) keyStore {
	// A journal in its steady state too: a generic plan made on an empty table may scan it.
	ddl := recommendedDDL() + callDDL + `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, deadline, ended_at, outcome)
  SELECT 't-sbs', 'a-sbs', 'old-' || i, 'charged', 1, 'r', now(), now(), 'succeeded' FROM generate_series(1, 20000) i;
`
	switch mode {
	case "fk":
		ddl += "ALTER TABLE pgsaga_call ADD FOREIGN KEY (tenant_id, actor_id, key) REFERENCES pgsaga_key ON DELETE CASCADE NOT VALID;\n"
	case "insert-only":
		ddl += `CREATE TABLE pgsaga_call_end (tenant_id text NOT NULL, actor_id text NOT NULL, key text NOT NULL,
  step text NOT NULL, attempt integer NOT NULL, ended_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  outcome text NOT NULL, provider_id text, PRIMARY KEY (tenant_id, actor_id, key, step, attempt));
INSERT INTO pgsaga_call_end (tenant_id, actor_id, key, step, attempt, outcome)
  SELECT 't-sbs', 'a-sbs', 'old-' || i, 'charged', 1, 'succeeded' FROM generate_series(1, 20000) i;
`
	}
	ks := lean("journal: "+mode, ddl)
	base := lean("", "")
	switch mode {
	case "cte", "fk", "insert-only", "implied":
		ks.claimStarted = func(r *kreq) (string, []any) {
			sql, args := base.claimStarted(r)
			sql = edit(sql, "RETURNING created_at", "RETURNING tenant_id, actor_id, key, created_at")
			return `WITH k AS (` + sql + `),
				c AS (INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, deadline)
					SELECT tenant_id, actor_id, key, 'charged', 1, $12, clock_timestamp() + $13 * interval '1 millisecond' FROM k)
				SELECT created_at FROM k`, append(args, "payment:"+r.key, int64(20_000))
		}
		ks.complete = func(r *kreq) (string, []any) {
			sql, args := base.complete(r)
			sql = edit(sql, "RETURNING 1)\n\t\t\t\tSELECT 1 / count(*) FROM written", "RETURNING tenant_id, actor_id, key)")
			// The journal row by its primary key, from the parameters: a join to the CTE could be
			// planned as a scan of the journal.
			end := `UPDATE pgsaga_call SET ended_at = clock_timestamp(), outcome = $10, provider_id = $11
					WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = 'charged' AND attempt = 1
					AND EXISTS (SELECT FROM written)`
			if mode == "implied" {
				// A call that succeeded is recorded by the completion itself: the key's recovery
				// point is past the call step. The journal row is only written again when the
				// call did not succeed (its own fenced write, not measured here).
				return sql + `
				SELECT 1 / count(*) FROM written`, args
			}
			if mode == "insert-only" {
				end = `INSERT INTO pgsaga_call_end (tenant_id, actor_id, key, step, attempt, outcome, provider_id)
					SELECT tenant_id, actor_id, key, 'charged', 1, $10, $11 FROM written`
			}
			return sql + `, c AS (` + end + `)
				SELECT 1 / count(*) FROM written`, append(args, "succeeded", "ch_"+r.key)
		}
	case "pipeline":
		// Written by phasedPipelined: the key's statement and the journal's in one batch.
	default:
		panic(mode)
	}
	return ks
}

// journalPipelined is the phased request with the journal's statements sent beside the key's in
// the same round trip (one implicit transaction per batch: an error skips the rest).
func journalPipelined(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_phased", i, body)
		if found, err := readKey(ctx, p, ks, r); err != nil || found {
			return fmt.Errorf("read: found %v, %v", found, err)
		}
		b := &pgx.Batch{}
		sql, args := ks.claimStarted(r)
		b.Queue(sql, args...)
		b.Queue(`INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, deadline)
			VALUES ($1, $2, $3, 'charged', 1, $4, clock_timestamp() + $5 * interval '1 millisecond')`,
			r.tenant, r.actor, r.key, "payment:"+r.key, int64(20_000))
		if err := p.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		b = &pgx.Batch{}
		sql, args = ks.complete(r)
		b.Queue(sql, args...)
		b.Queue(`UPDATE pgsaga_call SET ended_at = clock_timestamp(), outcome = $4, provider_id = $5
			WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = 'charged' AND attempt = 1`,
			r.tenant, r.actor, r.key, "succeeded", "ch_"+r.key)
		if err := p.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		return nil
	}
}

// phasedWithStatement is a phased request whose last phase sends a business statement, so that
// its fenced write must keep COMMIT from running when the lease was lost: claim (autocommit);
// BEGIN + the statement; fenced completion + COMMIT. With check, the completion is a plain
// UPDATE whose row count Go checks before sending COMMIT in a round trip of its own.
func phasedWithStatement(ks keyStore, check bool) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_phased", i, body)
		var v any
		sql, args := ks.claimStarted(r)
		if err := p.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		conn, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		b := &pgx.Batch{}
		b.Queue("begin")
		b.Queue(orderSQL, r.key)
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !check {
			return writeCommit(ctx, conn, ks.complete, r)
		}
		sql, args = ks.complete(r)
		sql = edit(sql, "WITH written AS (", "", "RETURNING 1)\n\t\t\t\tSELECT 1 / count(*) FROM written", "RETURNING 1")
		if err := conn.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			_, _ = conn.Exec(ctx, "rollback")
			return fmt.Errorf("complete: %w", err)
		}
		_, err = conn.Exec(ctx, "commit")
		return err
	}
}

// claimFirst is the phased request in two round trips for a new key: the claim is sent first
// (INSERT … ON CONFLICT DO NOTHING RETURNING, with a read of the existing row in the same
// pipeline for a duplicate), then the completion.
func claimFirst(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_phased", i, body)
		sql, args := ks.claimStarted(r)
		b := &pgx.Batch{}
		if strings.Contains(sql, "RETURNING tenant_id, actor_id, key, created_at") {
			sql = edit(sql, "RETURNING tenant_id, actor_id, key, created_at", "ON CONFLICT DO NOTHING RETURNING tenant_id, actor_id, key, created_at")
		} else {
			sql = edit(sql, "RETURNING created_at", "ON CONFLICT DO NOTHING RETURNING created_at")
		}
		b.Queue(sql, args...)
		b.Queue(ks.read, r.tenant, r.actor, r.key)
		br := p.SendBatch(ctx, b)
		var v any
		err := br.QueryRow().Scan(&v)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		sql, args = ks.complete(r)
		if err := p.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		return nil
	}
}

// execMode is a pool setting: pgx's query exec mode.
func execMode(m pgx.QueryExecMode) func(*pgxpool.Config) {
	return func(c *pgxpool.Config) { c.ConnConfig.DefaultQueryExecMode = m }
}

// jsonAsText passes ks's JSON arguments as strings: without a statement description (pgx's exec
// and simple protocol modes) a []byte goes as bytea, which jsonb refuses.
func jsonAsText(ks keyStore) keyStore {
	for _, f := range []*func(*kreq) (string, []any){&ks.claimStarted, &ks.claimCompleted, &ks.complete} {
		orig := *f
		*f = func(r *kreq) (string, []any) {
			sql, args := orig(r)
			for i, a := range args {
				if b, ok := a.([]byte); ok && len(b) > 0 && (&b[0] == &r.state[0] || &b[0] == &r.respHeader[0]) {
					args[i] = string(b)
				}
			}
			return sql, args
		}
	}
	return ks
}

// narrowRead is the read a request needs to answer a retry: no request body, no saved state (they
// are only needed to resume, and a takeover reads them), decoded without JSON.
const narrowRead = `SELECT operation, method, path, request_hash, status, response_status, response_headers,
	response_body, coalesce(locked_until > now(), false)
	FROM pgsaga_key WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`

// replayNarrow is a replay in one round trip with the narrow read.
func replayNarrow() func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_single", i%512, body)
		var (
			op, method, path, status string
			hash, header, respBody   []byte
			respStatus               *int32
			leased                   bool
		)
		err := p.QueryRow(ctx, narrowRead, r.tenant, r.actor, r.key).Scan(&op, &method, &path, &hash, &status,
			&respStatus, &header, &respBody, &leased)
		if err != nil {
			return err
		}
		if status != "completed" || respStatus == nil {
			return fmt.Errorf("status %s", status)
		}
		return nil
	}
}
