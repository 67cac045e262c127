package perflab

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/saga"
)

// The key store of the experiments: the key table's DDL and the statements a request sends,
// today's copied from migrations/sql/001_keys.up.sql and saga/store.go, and variants of both.

// todayDDL is the key table as migrated today.
func todayDDL() string {
	b, err := fs.ReadFile(migrations.PgSaga().FS, "001_keys.up.sql")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// edit applies replacements to ddl, each of which must match: an experiment that silently
// measures the unchanged schema would be worse than none.
func edit(ddl string, oldNew ...string) string {
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(ddl, oldNew[i]) {
			panic(fmt.Sprintf("edit: %q not in the DDL", oldNew[i]))
		}
		ddl = strings.Replace(ddl, oldNew[i], oldNew[i+1], 1)
	}
	return ddl
}

// kreq is one request's key: what the engine passes to its statements.
type kreq struct {
	tenant, actor, key, op, method, path string
	hash, body                           []byte
	token                                uuid.UUID
	state, respHeader, respBody          []byte
}

func newReq(op string, i int, bodyBytes []byte) *kreq {
	return &kreq{tenant: "t-sbs", actor: "a-sbs", key: fmt.Sprintf("key-%010d", i), op: op,
		method: "POST", path: "/" + op, hash: make([]byte, 32), body: bodyBytes, token: uuid.New(),
		state: []byte(`{}`), respHeader: []byte(`{"Content-Type":["application/json"]}`), respBody: []byte(`{"ok":true}`)}
}

// keyStore is one way of storing keys: DDL and the statements of each step of a request.
type keyStore struct {
	name string
	ddl  string
	// claimStarted inserts the key started at its first recovery point; it returns one row.
	claimStarted func(r *kreq) (string, []any)
	// claimCompleted inserts the key completed with its response (single transaction).
	claimCompleted func(r *kreq) (string, []any)
	// complete moves a started key to completed, fenced by the token: it returns one row, or
	// raises (or returns none) when the lease was lost.
	complete func(r *kreq) (string, []any)
	// read selects the key (saga.KeyColumns for today's columns).
	read string
}

const (
	ms         = 30_000 // lease, ms
	retainMs   = 86_400_000
	lookupSQL  = `SELECT ` + saga.KeyColumns + ` FROM pgsaga_key WHERE tenant_id = $1 AND actor_id = $2 AND key = $3`
	todayInsrt = `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
			request_hash, request_body, status, recovery_point, state, lease_token, locked_until,
			last_error, response_status, response_headers, response_body, completed_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
			CASE WHEN $9 = 'started' THEN now() + $13 * interval '1 millisecond' END,
			$14, $15, $16, $17,
			CASE WHEN $9 = 'completed' THEN now() END,
			CASE WHEN $9 = 'completed' THEN now() + $18 * interval '1 millisecond' END)`
	todayUpdate = `UPDATE pgsaga_key SET
			status = $5, recovery_point = $6, state = $7,
			locked_until = CASE WHEN $5 = 'started' THEN now() + $8 * interval '1 millisecond' END,
			response_status = $9, response_headers = $10, response_body = $11,
			completed_at = CASE WHEN $5 = 'completed' THEN now() END,
			expires_at = CASE WHEN $5 = 'completed' THEN now() + $12 * interval '1 millisecond' END,
			last_error = coalesce($13, last_error),
			updated_at = now()
		WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'`
	todayFenced = `WITH written AS (` + todayUpdate + ` RETURNING 1)
		SELECT CASE WHEN (SELECT count(*) FROM written) = 1 THEN 1 ELSE pgsaga_lease_lost($3) END`
)

func today() keyStore {
	status := 201
	return keyStore{name: "today", ddl: todayDDL(), read: lookupSQL,
		claimStarted: func(r *kreq) (string, []any) {
			return todayInsrt + ` RETURNING created_at`, []any{r.tenant, r.actor, r.key, r.op, r.method, r.path,
				r.hash, r.body, "started", "created", r.state, r.token, int64(ms), (*string)(nil), (*int)(nil), []byte(nil), []byte(nil), int64(0)}
		},
		claimCompleted: func(r *kreq) (string, []any) {
			return todayInsrt + ` RETURNING created_at`, []any{r.tenant, r.actor, r.key, r.op, r.method, r.path,
				r.hash, []byte{}, "completed", "finished", r.state, r.token, int64(0), (*string)(nil), &status, r.respHeader, r.respBody, int64(retainMs)}
		},
		complete: func(r *kreq) (string, []any) {
			return todayFenced, []any{r.tenant, r.actor, r.key, r.token, "completed", "finished", r.state, int64(0),
				&status, r.respHeader, r.respBody, int64(retainMs), (*string)(nil)}
		},
	}
}

// lean is today's schema with statements written per purpose: constants in the SQL instead of
// parameters and CASE expressions, the token as pgtype.UUID (google/uuid's driver.Valuer makes
// pgx format it as text, fail to encode it as binary, build an error with fmt, and parse it
// back), and the fence as a division by zero instead of a plpgsql call.
func lean(name, ddl string) keyStore {
	return keyStore{name: name, ddl: ddl, read: lookupSQL,
		claimStarted: func(r *kreq) (string, []any) {
			return `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
					request_hash, request_body, recovery_point, state, lease_token, locked_until)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'created', $9, $10, clock_timestamp() + $11 * interval '1 millisecond')
				RETURNING created_at`,
				[]any{r.tenant, r.actor, r.key, r.op, r.method, r.path, r.hash, r.body, r.state, pgUUID(r.token), int64(ms)}
		},
		claimCompleted: func(r *kreq) (string, []any) {
			return `INSERT INTO pgsaga_key (tenant_id, actor_id, key, operation, method, path,
					request_hash, request_body, status, recovery_point, state, lease_token,
					response_status, response_headers, response_body, completed_at, expires_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, '', 'completed', 'finished', $8, $9, $10, $11, $12,
					now(), now() + $13 * interval '1 millisecond')
				RETURNING created_at`,
				[]any{r.tenant, r.actor, r.key, r.op, r.method, r.path, r.hash, r.state, pgUUID(r.token), int32(201), r.respHeader, r.respBody, int64(retainMs)}
		},
		complete: func(r *kreq) (string, []any) {
			return `WITH written AS (UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished',
					state = $5, locked_until = NULL, response_status = $6, response_headers = $7,
					response_body = $8, completed_at = now(), expires_at = now() + $9 * interval '1 millisecond',
					updated_at = now()
				WHERE tenant_id = $1 AND actor_id = $2 AND key = $3 AND lease_token = $4 AND status = 'started'
				RETURNING 1)
				SELECT 1 / count(*) FROM written`,
				[]any{r.tenant, r.actor, r.key, pgUUID(r.token), r.state, int32(201), r.respHeader, r.respBody, int64(retainMs)}
		},
	}
}

func pgUUID(u uuid.UUID) pgtype.UUID { return pgtype.UUID{Bytes: u, Valid: true} }

// The shapes of a request: which statements travel in which round trip.

// readKey reads the key alone (autocommit) and reports whether it exists.
func readKey(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, ks keyStore, r *kreq) (bool, error) {
	_, err := saga.ScanKey(q.QueryRow(ctx, ks.read, r.tenant, r.actor, r.key))
	if errors.Is(err, saga.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// phasedToday is the engine's phased request today: BEGIN + read; claim + COMMIT; BEGIN;
// fenced completion + COMMIT.
func phasedToday(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_phased", i, body)
		conn, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		b := &pgx.Batch{}
		b.Queue("begin")
		b.Queue(ks.read, r.tenant, r.actor, r.key)
		br := conn.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := saga.ScanKey(br.QueryRow()); !errors.Is(err, saga.ErrKeyNotFound) {
			return fmt.Errorf("read: %v", err)
		}
		if err := br.Close(); err != nil {
			return err
		}
		if err := writeCommit(ctx, conn, ks.claimStarted, r); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, "begin"); err != nil {
			return err
		}
		return writeCommit(ctx, conn, ks.complete, r)
	}
}

// writeCommit sends a key write and COMMIT in one round trip, as saga/phasetx.go does.
func writeCommit(ctx context.Context, conn *pgxpool.Conn, stmt func(*kreq) (string, []any), r *kreq) error {
	sql, args := stmt(r)
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	b.Queue("commit")
	br := conn.SendBatch(ctx, b)
	var v any
	err := br.QueryRow().Scan(&v)
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		err = fmt.Errorf("not committed: %s", tag)
	}
	if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(ctx, "rollback")
	}
	return err
}

// phasedLean is the phased request with phases that send no statements: read; claim
// (autocommit); completion (autocommit).
func phasedLean(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return phasedLeanBody(ks, body)
}

func phasedLeanBody(ks keyStore, reqBody []byte) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_phased", i, reqBody)
		if found, err := readKey(ctx, p, ks, r); err != nil || found {
			return fmt.Errorf("read: found %v, %v", found, err)
		}
		var v any
		sql, args := ks.claimStarted(r)
		if err := p.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		sql, args = ks.complete(r)
		if err := p.QueryRow(ctx, sql, args...).Scan(&v); err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		return nil
	}
}

const orderSQL = `INSERT INTO sbs_orders(ref, amount) VALUES ($1, 100) RETURNING id`

// singleToday is the engine's single-transaction request today: BEGIN + read; the effect;
// claim + COMMIT.
func singleToday(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_single", i, body)
		conn, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		b := &pgx.Batch{}
		b.Queue("begin")
		b.Queue(ks.read, r.tenant, r.actor, r.key)
		br := conn.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			return err
		}
		if _, err := saga.ScanKey(br.QueryRow()); !errors.Is(err, saga.ErrKeyNotFound) {
			return fmt.Errorf("read: %v", err)
		}
		if err := br.Close(); err != nil {
			return err
		}
		var id int64
		if err := conn.QueryRow(ctx, orderSQL, r.key).Scan(&id); err != nil {
			return err
		}
		return writeCommit(ctx, conn, ks.claimCompleted, r)
	}
}

// singleLazy reads the key alone, then sends BEGIN with the effect, then claim + COMMIT.
func singleLazy(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_single", i, body)
		if found, err := readKey(ctx, p, ks, r); err != nil || found {
			return fmt.Errorf("read: found %v, %v", found, err)
		}
		conn, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		b := &pgx.Batch{}
		b.Queue("begin")
		b.Queue(orderSQL, r.key)
		br := conn.SendBatch(ctx, b)
		var id int64
		if _, err = br.Exec(); err == nil {
			err = br.QueryRow().Scan(&id)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		return writeCommit(ctx, conn, ks.claimCompleted, r)
	}
}

// replayToday is today's replay: BEGIN + read, then ROLLBACK.
func replayToday(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_single", i%512, body)
		conn, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		b := &pgx.Batch{}
		b.Queue("begin")
		b.Queue(ks.read, r.tenant, r.actor, r.key)
		br := conn.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			return err
		}
		k, err := saga.ScanKey(br.QueryRow())
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if k.Status != saga.KeyStatusCompleted {
			return fmt.Errorf("status %s", k.Status)
		}
		_, err = conn.Exec(ctx, "rollback")
		return err
	}
}

// replayRead is a replay in one round trip: the read alone, no transaction.
func replayRead(ks keyStore) func(ctx context.Context, p *pgxpool.Pool, i int) error {
	return func(ctx context.Context, p *pgxpool.Pool, i int) error {
		r := newReq("sbs_single", i%512, body)
		k, err := saga.ScanKey(p.QueryRow(ctx, ks.read, r.tenant, r.actor, r.key))
		if err != nil {
			return err
		}
		if k.Status != saga.KeyStatusCompleted {
			return fmt.Errorf("status %s", k.Status)
		}
		return nil
	}
}

// prefill is how many completed keys a variant's key table holds before it is measured.
const prefill = 20_000

const prefillOrders = `INSERT INTO sbs_orders(ref, amount) SELECT 'old-' || i, 100 FROM generate_series(1, 20000) i`

// setupKeys creates ks's schema and the orders table; with replay, 512 completed keys.
func setupKeys(ks keyStore, replay bool) func(ctx context.Context, p *pgxpool.Pool) error {
	return setupKeysPrefill(ks, replay, prefill)
}

// setupKeysPrefill is setupKeys with prefill keys in the table beforehand.
func setupKeysPrefill(ks keyStore, replay bool, prefill int) func(ctx context.Context, p *pgxpool.Pool) error {
	return func(ctx context.Context, p *pgxpool.Pool) error {
		if _, err := p.Exec(ctx, ks.ddl+";\n"+ordersDDL); err != nil {
			return fmt.Errorf("%s: %w", ks.name, err)
		}
		for i := range 512 * btoi(replay) {
			r := newReq("sbs_single", i, body)
			sql, args := ks.claimCompleted(r)
			if _, err := p.Exec(ctx, sql, args...); err != nil {
				return err
			}
		}
		// A table in its steady state: filled and analyzed. (On an empty table, a connection's
		// generic plan for the key's statements can be a sequential scan, kept while the table
		// grows until autovacuum invalidates it: see TestLabColdStart.)
		for n := 0; n < prefill; n += 1000 {
			b := &pgx.Batch{}
			for i := n; i < n+1000; i++ {
				sql, args := ks.claimCompleted(newReq("sbs_single", 8_000_000_000+i, body))
				b.Queue(sql, args...)
			}
			if err := p.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		return exec(prefillOrders)(ctx, p)
	}
}
