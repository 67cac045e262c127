package perflab

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/internal/pgpipe"
	"github.com/pgsaga/pgsaga/migrations"
)

// TestLabShapes compares, on the harness's phased request (a claim that journals the call, then
// a completion that records its outcome, each autocommitted), the engine's statements with
// other shapes of the same two writes: where the first attempt's journal entry lives, which
// indexes the key table keeps, and how the completion is fenced. Raw SQL on a migrated database
// filled with 20,000 completed keys, so that only the statements and the schema differ.
//
//	go test ./perflab -run TestLabShapes -lab -lab.rounds 5 -v   (in bench/)
func TestLabShapes(t *testing.T) {
	requireLab(t)
	floor2rt, _ := floorVariants()
	vs := []variant{floor2rt}
	for _, s := range shapes() {
		if *onlyFlag == "" || strings.Contains(s.name, *onlyFlag) {
			vs = append(vs, s.variant())
		}
	}
	defaultLab().compare(t, os.Stdout, "phased shapes (raw SQL) against floor-2rt", vs)
}

// shape is one way of writing the phased request: schema changes after the migrations, and the
// claim's and the completion's SQL with a function giving each its arguments.
type shape struct {
	name       string
	schema     string
	claim      string
	claimArgs  func(key string, token *pgtype.UUID) []any
	complete   string
	doneArgs   func(key string, token *pgtype.UUID) []any
	completeRe bool // the completion returns a row (QueryRow), else Exec
	// removeEvery runs lazyRemoveSQL after every removeEvery-th request, in that request.
	removeEvery int
	// randomKeys names keys by a random UUID (the hand-written floors' keys), not in order.
	randomKeys bool
}

var (
	shapeHash = make([]byte, 32)
	shapeBody = []byte(`{"amount":100}`)
	shapeResp = []byte(`{"ok":true}`)
)

const shapeRef = "ref_abcdefghijklmnopqrstuvwxyz"

// The engine's statements before migration 009 (the call's journal row in pgsaga_call; now the
// "row journal" shapes below are the engine's), with fenceSQL and the waiters' notification
// inlined. Migration 009 is applied under every shape: its columns and its partial reference
// index cost a shape that leaves call_step NULL only the index's predicate.
const (
	engineClaimSQL = `WITH k AS (INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'started', $9, $10, $11,
		clock_timestamp() + $12::bigint * interval '1 millisecond', $13)
	RETURNING created_at, locked_until),
journaled AS (
	INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, max_in_flight_ms)
	SELECT $1, $2, $3, $14, 1, $15, clock_timestamp(), k.locked_until, $16 FROM k)
SELECT k.created_at, (extract(epoch FROM k.locked_until - clock_timestamp()) * 1000)::bigint FROM k`

	engineCompleteSQL = `WITH k AS (
	UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = $9, locked_until = NULL,
		response_status = $10, response_headers = $11, response_body = $12, completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $13::bigint * interval '1 millisecond', updated_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
	RETURNING waiters),
done AS (
	UPDATE pgsaga_call SET outcome = $7, provider_id = $8, ended_at = clock_timestamp()
	WHERE $6::text IS NOT NULL AND tenant_id = $1 AND actor_id = $2 AND key = $3 AND step = $6 AND attempt = $5
	  AND EXISTS (SELECT FROM k))
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost($3) END, count(CASE WHEN k.waiters THEN pg_notify('pgsaga_key_done',
		json_build_array($1::text, $2::text, $3::text)::text) END) FROM k`
)

func engineClaimArgs(key string, token *pgtype.UUID) []any {
	return []any{"t-sbs", "a-sbs", key, "sbs_phased", "POST", "/sbs_phased", shapeHash, shapeBody, "created",
		[]byte("{}"), token, int64(30000), nil, "charged", shapeRef, int64(0)}
}

func engineDoneArgs(key string, token *pgtype.UUID) []any {
	return []any{"t-sbs", "a-sbs", key, token, int64(1), "charged", "succeeded", nil,
		[]byte("{}"), int32(201), []byte("{}"), shapeResp, int64(86400000)}
}

// The first attempt's journal entry in the key row.
const (
	rowJournalSchema = `ALTER TABLE pgsaga_key ADD COLUMN IF NOT EXISTS call_step text, ADD COLUMN IF NOT EXISTS call_reference text,
		ADD COLUMN IF NOT EXISTS call_deadline timestamptz, ADD COLUMN IF NOT EXISTS call_window_ms bigint, ADD COLUMN IF NOT EXISTS call_ended_at timestamptz,
		ADD COLUMN IF NOT EXISTS call_outcome text, ADD COLUMN IF NOT EXISTS call_provider_id text;`
	rowJournalRefIndex = `CREATE INDEX IF NOT EXISTS pgsaga_key_call_reference_idx ON pgsaga_key (call_reference);`

	rowClaimSQL = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context,
		call_step, call_reference, call_window_ms, call_deadline)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'started', $9, $10, $11,
		clock_timestamp() + $12::bigint * interval '1 millisecond', $13, $14, $15, $16,
		clock_timestamp() + $12::bigint * interval '1 millisecond')
	RETURNING created_at, (extract(epoch FROM locked_until - clock_timestamp()) * 1000)::bigint`

	// rowCompleteCTESQL keeps the fence and the notification as the engine writes them.
	rowCompleteCTESQL = `WITH k AS (
	UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = $7, locked_until = NULL,
		response_status = $8, response_headers = $9, response_body = $10, completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $11::bigint * interval '1 millisecond', updated_at = clock_timestamp(),
		call_outcome = $5, call_provider_id = $6, call_ended_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
	RETURNING waiters)
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost($3) END, count(CASE WHEN k.waiters THEN pg_notify('pgsaga_key_done',
		json_build_array($1::text, $2::text, $3::text)::text) END) FROM k`

	// rowCompletePlainSQL is the completion of a phase that sent nothing: alone in its implicit
	// transaction, a row count of 0 is the fence, and the notification rides in RETURNING.
	rowCompletePlainSQL = `UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = $7, locked_until = NULL,
		response_status = $8, response_headers = $9, response_body = $10, completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $11::bigint * interval '1 millisecond', updated_at = clock_timestamp(),
		call_outcome = $5, call_provider_id = $6, call_ended_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
	RETURNING CASE WHEN waiters THEN pg_notify('pgsaga_key_done', json_build_array($1::text, $2::text, $3::text)::text) END`
)

func rowClaimArgs(key string, token *pgtype.UUID) []any {
	return []any{"t-sbs", "a-sbs", key, "sbs_phased", "POST", "/sbs_phased", shapeHash, shapeBody, "created",
		[]byte("{}"), token, int64(30000), nil, "charged", shapeRef, int64(0)}
}

func rowDoneArgs(key string, token *pgtype.UUID) []any {
	return []any{"t-sbs", "a-sbs", key, token, "succeeded", nil,
		[]byte("{}"), int32(201), []byte("{}"), shapeResp, int64(86400000)}
}

// Indexes that make the completion HOT on PostgreSQL 15: no index names a column the completion
// writes (status, expires_at), so the resumer's index keeps completed keys until something removes
// them (the bound: what a HOT completion would buy, before paying for that removal).
const hotSchema = `DROP INDEX pgsaga_key_resumable_idx; DROP INDEX pgsaga_key_parked_idx; DROP INDEX pgsaga_key_age_brin;
	CREATE INDEX pgsaga_key_resumable_idx ON pgsaga_key (next_attempt_at) WHERE request_body <> '';
	CREATE INDEX pgsaga_key_age_brin ON pgsaga_key USING brin (created_at);`

const noRefIndex = `DROP INDEX pgsaga_call_reference_idx;`

// lazySchema makes the completion HOT with an index the resumer's cleanup keeps: a claim of a
// started key enters it (resumable), and a background statement (lazyRemoveSQL) takes completed
// keys out of it later, a batch at a time.
const lazySchema = `DROP INDEX pgsaga_key_resumable_idx; DROP INDEX pgsaga_key_parked_idx; DROP INDEX pgsaga_key_age_brin;
	ALTER TABLE pgsaga_key ADD COLUMN resumable boolean NOT NULL DEFAULT false;
	CREATE INDEX pgsaga_key_resumable_idx ON pgsaga_key (next_attempt_at) WHERE resumable;
	CREATE INDEX pgsaga_key_age_brin ON pgsaga_key USING brin (created_at);`

const lazyRemoveSQL = `UPDATE pgsaga_key SET resumable = false WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM pgsaga_key WHERE resumable AND status = 'completed' ORDER BY next_attempt_at LIMIT 1000))`

// openSchema keeps the keys that are not completed in a table of their own, which the resumer
// reads: the claim inserts a row there, the completion deletes it, and the completion of the key
// row touches no indexed column (HOT).
const openSchema = `DROP INDEX pgsaga_key_resumable_idx; DROP INDEX pgsaga_key_parked_idx; DROP INDEX pgsaga_key_age_brin;
	CREATE INDEX pgsaga_key_age_brin ON pgsaga_key USING brin (created_at);
	CREATE TABLE pgsaga_key_open (tenant_id text NOT NULL, actor_id text NOT NULL, key text NOT NULL,
		next_attempt_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (tenant_id, actor_id, key));
	CREATE INDEX pgsaga_key_open_due_idx ON pgsaga_key_open (next_attempt_at);`

const (
	openClaimSQL = `WITH k AS (` + rowClaimSQL + `),
	o AS (INSERT INTO pgsaga_key_open (tenant_id, actor_id, key) SELECT $1, $2, $3 FROM k)
	SELECT * FROM k`
	openCompleteSQL = `WITH k AS (
	UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = $7, locked_until = NULL,
		response_status = $8, response_headers = $9, response_body = $10, completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + $11::bigint * interval '1 millisecond', updated_at = clock_timestamp(),
		call_outcome = $5, call_provider_id = $6, call_ended_at = clock_timestamp()
	WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
	RETURNING waiters),
	o AS (DELETE FROM pgsaga_key_open WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND EXISTS (SELECT FROM k))
SELECT CASE WHEN count(*) = 0 THEN pgsaga_lease_lost($3) END, count(CASE WHEN k.waiters THEN pg_notify('pgsaga_key_done',
		json_build_array($1::text, $2::text, $3::text)::text) END) FROM k`
)

func shapes() []shape {
	return []shape{
		{name: "engine", claim: engineClaimSQL, claimArgs: engineClaimArgs, complete: engineCompleteSQL, doneArgs: engineDoneArgs, completeRe: true},
		{name: "engine, no journal reference index", schema: noRefIndex, claim: engineClaimSQL, claimArgs: engineClaimArgs,
			complete: engineCompleteSQL, doneArgs: engineDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE completion", schema: rowJournalSchema + rowJournalRefIndex, claim: rowClaimSQL, claimArgs: rowClaimArgs,
			complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, plain completion", schema: rowJournalSchema + rowJournalRefIndex, claim: rowClaimSQL, claimArgs: rowClaimArgs,
			complete: rowCompletePlainSQL, doneArgs: rowDoneArgs},
		{name: "row journal, no ref index, plain completion", schema: rowJournalSchema, claim: rowClaimSQL, claimArgs: rowClaimArgs,
			complete: rowCompletePlainSQL, doneArgs: rowDoneArgs},
		{name: "engine, HOT completion", schema: hotSchema, claim: engineClaimSQL, claimArgs: engineClaimArgs,
			complete: engineCompleteSQL, doneArgs: engineDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE, HOT completion", schema: rowJournalSchema + rowJournalRefIndex + hotSchema, claim: rowClaimSQL, claimArgs: rowClaimArgs,
			complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE, HOT + lazy removal", schema: rowJournalSchema + rowJournalRefIndex + lazySchema,
			claim:     strings.Replace(strings.Replace(rowClaimSQL, "call_deadline)", "call_deadline, resumable)", 1), "'1 millisecond')\n\tRETURNING", "'1 millisecond', true)\n\tRETURNING", 1),
			claimArgs: rowClaimArgs, complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true, removeEvery: 256},
		{name: "row journal + ref index, CTE, HOT, open-key table", schema: rowJournalSchema + rowJournalRefIndex + openSchema,
			claim: openClaimSQL, claimArgs: rowClaimArgs, complete: openCompleteSQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE: no BRIN", schema: rowJournalSchema + rowJournalRefIndex + `DROP INDEX pgsaga_key_age_brin;`,
			claim: rowClaimSQL, claimArgs: rowClaimArgs, complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE: no parked index", schema: rowJournalSchema + rowJournalRefIndex + `DROP INDEX pgsaga_key_parked_idx;`,
			claim: rowClaimSQL, claimArgs: rowClaimArgs, complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE: no resumable index", schema: rowJournalSchema + rowJournalRefIndex + `DROP INDEX pgsaga_key_resumable_idx;`,
			claim: rowClaimSQL, claimArgs: rowClaimArgs, complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE: fillfactor 85", schema: rowJournalSchema + rowJournalRefIndex + `ALTER TABLE pgsaga_key SET (fillfactor = 85);`,
			claim: rowClaimSQL, claimArgs: rowClaimArgs, complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, CTE: random keys", schema: rowJournalSchema + rowJournalRefIndex, randomKeys: true,
			claim: rowClaimSQL, claimArgs: rowClaimArgs, complete: rowCompleteCTESQL, doneArgs: rowDoneArgs, completeRe: true},
		{name: "row journal + ref index, plain, HOT completion", schema: rowJournalSchema + rowJournalRefIndex + hotSchema, claim: rowClaimSQL, claimArgs: rowClaimArgs,
			complete: rowCompletePlainSQL, doneArgs: rowDoneArgs},
	}
}

func (s shape) variant() variant {
	return variant{name: s.name,
		setup: func(ctx context.Context, p *pgxpool.Pool) error {
			if _, err := migrations.Migrate(ctx, p, &migrations.MigrateOpts{SkipRiver: true}); err != nil {
				return err
			}
			if s.schema != "" {
				if _, err := p.Exec(ctx, s.schema); err != nil {
					return err
				}
			}
			return fill(ctx, p)
		},
		op: s.op,
	}
}

// fill fills a migrated key table with 20,000 completed phased keys (their journal in
// pgsaga_call) and analyzes it: the steady state a running service sees.
func fill(ctx context.Context, p *pgxpool.Pool) error {
	for _, q := range []string{
		`INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, lease_token, response_status, response_headers, response_body, completed_at, expires_at)
SELECT 't-sbs', 'a-sbs', 'fill-' || i, 'sbs_phased', 'POST', '/sbs_phased', '\x00', '{"amount":100}',
	'completed', 'finished', '{}', gen_random_uuid(), 201, '{}', '{"ok":true}', now(), now() + interval '1 day'
FROM generate_series(1, 20000) i`,
		`INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, started_at, deadline, ended_at, outcome)
SELECT 't-sbs', 'a-sbs', 'fill-' || i, 'charged', 1, 'ref_fill' || i, now(), now(), now(), 'succeeded'
FROM generate_series(1, 20000) i`,
		`VACUUM ANALYZE pgsaga_key`, `VACUUM ANALYZE pgsaga_call`,
	} {
		if _, err := p.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q[:30], err)
		}
	}
	return nil
}

// op is one phased request of shape s.
func (s shape) op(ctx context.Context, p *pgxpool.Pool, i int) error {
	key := fmt.Sprintf("k-%09d", i)
	if s.randomKeys {
		key = uuid.NewString()
	}
	token := pgtype.UUID{Bytes: uuid.New(), Valid: true}
	var created pgtype.Timestamptz
	var left int64
	if err := p.QueryRow(ctx, s.claim, s.claimArgs(key, &token)...).Scan(&created, &left); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if s.removeEvery > 0 && i%s.removeEvery == 0 {
		if _, err := p.Exec(ctx, lazyRemoveSQL); err != nil {
			return fmt.Errorf("removal: %w", err)
		}
	}
	if s.completeRe {
		return p.QueryRow(ctx, s.complete, s.doneArgs(key, &token)...).Scan(nil, nil)
	}
	rows, err := p.Query(ctx, s.complete, s.doneArgs(key, &token)...)
	if err != nil {
		return err
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("completion wrote %d rows", n)
	}
	return nil
}

// TestLabShapesClient puts the engine beside the raw statements it sends, to tell the engine's
// own client work from the statements'.
func TestLabShapesClient(t *testing.T) {
	requireLab(t)
	floor2rt, _ := floorVariants()
	filled := engineVariant("pgsaga-phased, filled", "sbs_phased", false, "")
	setup := filled.setup
	filled.setup = func(ctx context.Context, p *pgxpool.Pool) error {
		if err := setup(ctx, p); err != nil {
			return err
		}
		return fill(ctx, p)
	}
	defaultLab().compare(t, os.Stdout, "engine against its own statements, raw", []variant{
		floor2rt, shapes()[3].variant(), engineVariant("pgsaga-phased", "sbs_phased", false, ""), filled,
	})
}

// BenchmarkShapeRaw sends the engine's two phased statements with no engine around them, from 8
// goroutines: beside BenchmarkEngine/phased/c=8, what the engine's own client work costs.
func BenchmarkShapeRaw(b *testing.B) {
	b.Run("pool", func(b *testing.B) { benchShape(b, shapes()[0].variant()) })
	b.Run("pgpipe", func(b *testing.B) { benchShape(b, shapes()[0].pipeVariant(false)) })
	b.Run("pgpipe+timeout", func(b *testing.B) { benchShape(b, shapes()[0].pipeVariant(true)) })
}

// pipeVariant sends s's statements as the engine does: each through a lazy transaction
// (internal/pgpipe) that sent nothing else, under a context with a timeout when timeout is set.
func (s shape) pipeVariant(timeout bool) variant {
	v := s.variant()
	v.op = func(ctx context.Context, p *pgxpool.Pool, i int) error {
		key := fmt.Sprintf("k-%09d", i)
		token := pgtype.UUID{Bytes: uuid.New(), Valid: true}
		var created pgtype.Timestamptz
		var left int64
		send := func(sql string, args []any, scan func(pgx.Row) error) error {
			ctx := ctx
			if timeout {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
			}
			tx, err := pgpipe.Begin(ctx, p, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(ctx) }()
			b := &pgx.Batch{}
			b.Queue(sql, args...).QueryRow(scan)
			return tx.CommitWith(ctx, b)
		}
		if err := send(s.claim, s.claimArgs(key, &token), func(r pgx.Row) error { return r.Scan(&created, &left) }); err != nil {
			return err
		}
		return send(s.complete, s.doneArgs(key, &token), func(r pgx.Row) error { return r.Scan(nil, nil) })
	}
	return v
}

func benchShape(b *testing.B, v variant) {
	ctx := context.Background()
	trips := &tripCounter{}
	p := newDatabase(b, 20, trips)
	if err := v.setup(ctx, p); err != nil {
		b.Fatal(err)
	}
	for i := range 50 {
		if err := v.op(ctx, p, 1_000_000+i); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	c0 := readCPU()
	start := time.Now()
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				if err := v.op(ctx, p, 2_000_000+i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	el := time.Since(start)
	used := readCPU().sub(c0)
	n := float64(b.N)
	b.ReportMetric(float64(used.client.Microseconds())/n, "client-µs/op")
	b.ReportMetric(float64(used.server.Microseconds())/n, "server-µs/op")
	b.ReportMetric(n/el.Seconds(), "req/s")
}

// TestLabShapeStatements prints what PostgreSQL spent per statement (pg_stat_statements) for the
// engine's phased request and for the same statements sent raw, 2,000 requests each at c=8.
func TestLabShapeStatements(t *testing.T) {
	requireLab(t)
	for _, v := range []variant{
		engineVariant("pgsaga-phased", "sbs_phased", false, ""),
		engineVariant("pgsaga-phased, no BRIN", "sbs_phased", false, `DROP INDEX pgsaga_key_age_brin`),
		engineVariant("pgsaga-phased, no reference index", "sbs_phased", false, `DROP INDEX pgsaga_key_call_reference_idx`),
		engineVariant("pgsaga-phased, no parked index", "sbs_phased", false, `DROP INDEX pgsaga_key_parked_idx`),
		engineVariant("pgsaga-phased, no resumable index", "sbs_phased", false, `DROP INDEX pgsaga_key_resumable_idx`),
		engineVariant("pgsaga-phased, fillfactor 70", "sbs_phased", false, `ALTER TABLE pgsaga_key SET (fillfactor = 70)`),
	} {
		t.Run(v.name, func(t *testing.T) {
			ctx := context.Background()
			p := newDatabase(t, 10, nil)
			if err := v.setup(ctx, p); err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				if err := v.op(ctx, p, i); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := p.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()`); err != nil {
				t.Fatal(err)
			}
			var next atomic.Int64
			next.Store(1000)
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for i := next.Add(1); i < 3000; i = next.Add(1) {
						if err := v.op(ctx, p, int(i)); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			rows, err := p.Query(ctx, `SELECT calls, mean_exec_time * 1000, shared_blks_hit::float8 / calls,
					wal_records::float8 / calls, wal_bytes::float8 / calls, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
				FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND calls > 0
				ORDER BY total_exec_time DESC LIMIT 8`)
			if err != nil {
				t.Fatal(err)
			}
			var (
				calls                   int64
				exec, blks, wrec, wbyte float64
				q                       string
			)
			_, err = pgx.ForEachRow(rows, []any{&calls, &exec, &blks, &wrec, &wbyte, &q}, func() error {
				fmt.Printf("%6d %7.1fµs %5.1f blks %4.1f WAL rec %5.0f B  %s\n", calls, exec, blks, wrec, wbyte, q)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLabExplainCompletion runs the engine's phased request 3,000 times at c=8, then shows the
// plan and the buffers of a claim and of a completion (EXPLAIN (ANALYZE, BUFFERS)), each a few
// times in a row.
func TestLabExplainCompletion(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	v := engineVariant("pgsaga-phased", "sbs_phased", false, "")
	p := newDatabase(t, 10, nil)
	if err := v.setup(ctx, p); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i < 3000; i = next.Add(1) {
				if err := v.op(ctx, p, int(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	show := func(sql string) {
		rows, err := p.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) `+sql)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println(strings.Join(lines, "\n"))
	}
	for i := range 3 {
		key := fmt.Sprintf("explain-%06d", i)
		show(fmt.Sprintf(`INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
		request_hash, request_body, status, recovery_point, state, lease_token, locked_until, trace_context,
		call_step, call_reference, call_max_in_flight_ms, call_started_at, call_deadline)
	VALUES ('t-sbs', 'a-sbs', '%s', 'sbs_phased', 'POST', '/x', '\x00', '{}', 'started', 'created', '{}', gen_random_uuid(),
		clock_timestamp() + interval '30 s', NULL, 'charged', 'ref_%s', 0, clock_timestamp(), clock_timestamp() + interval '30 s')`, key, key))
		show(fmt.Sprintf(`UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', state = '{}', locked_until = NULL,
		response_status = 201, response_headers = '{}', response_body = '{}', completed_at = clock_timestamp(),
		expires_at = clock_timestamp() + interval '1 day', updated_at = clock_timestamp(),
		call_outcome = 'succeeded', call_ended_at = clock_timestamp()
		WHERE tenant_id = 't-sbs' AND actor_id = 'a-sbs' AND key = '%s' AND status = 'started'`, key))
	}
}

// TestLabShapeProfile samples the backends (perf) of the engine's phased request and of its
// statements sent raw, as TestLabServerProfile does.
func TestLabShapeProfile(t *testing.T) {
	requireLab(t)
	raw := shapes()[2].variant()
	raw.name = "raw"
	for _, v := range []variant{raw, engineVariant("engine", "sbs_phased", false, "")} {
		profile(t, v, 6*time.Second)
	}
}

// TestLabKeyIndexes measures, on the engine's phased request, what each secondary index of the
// key table costs: the bounds of dropping one (the resumer, the operators and GC need them).
func TestLabKeyIndexes(t *testing.T) {
	requireLab(t)
	floor2rt, _ := floorVariants()
	defaultLab().compare(t, os.Stdout, "phased: the key table's secondary indexes", []variant{
		floor2rt,
		engineVariant("pgsaga-phased", "sbs_phased", false, ""),
		engineVariant("no parked index", "sbs_phased", false, `DROP INDEX pgsaga_key_parked_idx`),
		engineVariant("no BRIN", "sbs_phased", false, `DROP INDEX pgsaga_key_age_brin`),
		engineVariant("no reference index", "sbs_phased", false, `DROP INDEX pgsaga_key_call_reference_idx`),
		engineVariant("reference index: hash", "sbs_phased", false, `DROP INDEX pgsaga_key_call_reference_idx;
			CREATE INDEX pgsaga_key_call_reference_idx ON pgsaga_key USING hash (call_reference) WHERE call_step IS NOT NULL`),
		engineVariant("reference index: B-tree of hashtext", "sbs_phased", false, `DROP INDEX pgsaga_key_call_reference_idx;
			CREATE INDEX pgsaga_key_call_reference_idx ON pgsaga_key (hashtext(call_reference)) WHERE call_step IS NOT NULL`),
	})
}
