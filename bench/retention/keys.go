package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// The keys the benchmarks fill are copies of one key the engine itself completed, by a
// single-transaction operation. A copy changes only what differs from key to key (the key, a
// random UUID as clients send; the request's fingerprint; the execution's token; the times), so
// that every row has the columns, the sizes and the TOAST decisions of a real completed key.
const (
	// requestBytes and responseBytes are the sizes of an order's request and response, the
	// keys GC cycles through.
	requestBytes  = 200
	responseBytes = 300
	// templateKey is the engine's own key, in a scope of its own, from which copies are made.
	templateKey = "retention-template-key"
)

// keyShape is the request a template key answered and the response it stored.
type keyShape struct {
	body     string
	response map[string]any
}

// orderShape is an order of requestBytes answered by responseBytes: the keys GC cycles
// through.
var orderShape = keyShape{
	body:     fmt.Sprintf(`{"amount":100,"currency":"eur","note":%q}`, strings.Repeat("q", requestBytes-40)),
	response: map[string]any{"id": 1, "status": "accepted", "note": strings.Repeat("r", responseBytes-40)},
}

// harnessShape is what the side-by-side harness's single-transaction requests store, so that a
// database filled for it holds more of its own keys.
var harnessShape = keyShape{body: `{"amount":100}`, response: map[string]any{"id": 1}}

// keyScope is where the copies go: the side-by-side harness's scope, so that a database filled
// for it holds its keys beside the harness's own.
var keyScope = saga.Scope{Tenant: "t-sbs", Actor: "a-sbs"}

// templateScope is the template key's scope (its tenant is spelled out in completeTemplate's
// statements too).
var templateScope = saga.Scope{Tenant: "t-retention", Actor: "a-retention"}

// completeTemplate has the engine complete the template key of shape, then moves it out of the
// key table into retention_template (so that GC never deletes it). Once per database.
func completeTemplate(ctx context.Context, pool *pgxpool.Pool, shape keyShape) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('retention_template') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	op := &phases.Operation{Name: "retention_order", Steps: []phases.Step{
		phases.Atomic("done", func(_ context.Context, _ pgx.Tx, run *phases.Run) error {
			return run.Respond(201, shape.response)
		}),
	}}
	client, err := saga.NewClient(&saga.Config{DB: pool, Operations: []*phases.Operation{op}})
	if err != nil {
		return err
	}
	_, err = client.Run(ctx, op.Name, &saga.Request{Scope: templateScope, Key: templateKey,
		Method: "POST", Path: "/orders", Body: []byte(shape.body)})
	if err != nil {
		return fmt.Errorf("error completing the template key: %w", err)
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE retention_template AS SELECT * FROM pgsaga_key WHERE tenant_id = 't-retention'`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM pgsaga_key WHERE tenant_id = 't-retention'`)
		return err
	})
}

// copyKeysSQL inserts $1 copies of the template key into the scope ($3, $4), each expiring $2 ms
// from now and completed $5 ms before now (clock_timestamp(), so that a generation's times rise
// through the heap as real traffic's do; a generation backdated by a day is a day's traffic
// earlier). The columns are those the engine's completion of a
// single-transaction key writes, and the times its defaults fill in.
const copyKeysSQL = `
INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path, request_hash, request_body,
	status, recovery_point, state, response_status, response_headers, response_body, completed_at,
	expires_at, lease_token, trace_context, next_attempt_at, created_at, updated_at)
SELECT $3, $4, k.key, t.operation, t.method, t.path,
	substring(sha256(convert_to(k.key, 'UTF8')) FROM 1 FOR length(t.request_hash)), t.request_body,
	t.status, t.recovery_point, t.state, t.response_status, t.response_headers, t.response_body,
	clock_timestamp() - $5::bigint * interval '1 millisecond',
	clock_timestamp() + $2::bigint * interval '1 millisecond', gen_random_uuid(), t.trace_context,
	clock_timestamp() - $5::bigint * interval '1 millisecond',
	clock_timestamp() - $5::bigint * interval '1 millisecond',
	clock_timestamp() - $5::bigint * interval '1 millisecond'
FROM retention_template t, LATERAL (SELECT gen_random_uuid()::text AS key FROM generate_series(1, $1)) k
`

// insertKeys inserts n completed keys, completed backdate ago and expiring after expiresIn, in statements of fillBatch
// keys (each its own transaction, as a stream of requests commits), and returns how long it
// took.
func insertKeys(ctx context.Context, pool *pgxpool.Pool, n int, expiresIn, backdate time.Duration) (time.Duration, error) {
	const fillBatch = 10_000
	start := time.Now()
	for done := 0; done < n; done += fillBatch {
		m := min(fillBatch, n-done)
		tag, err := pool.Exec(ctx, copyKeysSQL, m, expiresIn.Milliseconds(), keyScope.Tenant, keyScope.Actor,
			backdate.Milliseconds())
		if err != nil {
			return 0, fmt.Errorf("error inserting keys: %w", err)
		}
		if tag.RowsAffected() != int64(m) {
			return 0, fmt.Errorf("inserted %d keys, not %d: is the template key missing?", tag.RowsAffected(), m)
		}
	}
	return time.Since(start), nil
}
