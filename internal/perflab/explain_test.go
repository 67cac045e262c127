package perflab

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestLabExplain prints EXPLAIN (ANALYZE, BUFFERS) of today's key read, claim and fenced
// completion, on a table holding keys (half completed, half started), each in a transaction that
// is rolled back.
func TestLabExplain(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	ks := today()
	p := newDatabase(t, 2, nil)
	if err := setupKeys(ks, false)(ctx, p); err != nil {
		t.Fatal(err)
	}
	// 20,000 keys: half completed by a fenced completion, half left started.
	for i := range 20_000 {
		r := newReq("sbs_phased", i, body)
		sql, args := ks.claimStarted(r)
		if _, err := p.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			sql, args = ks.complete(r)
			if _, err := p.Exec(ctx, sql, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := p.Exec(ctx, "VACUUM ANALYZE pgsaga_key"); err != nil {
		t.Fatal(err)
	}
	started := newReq("sbs_phased", 1, body)
	// The started key's token: the fenced write must present it.
	if err := p.QueryRow(ctx, `SELECT lease_token FROM pgsaga_key WHERE key = $1`, started.key).Scan(&started.token); err != nil {
		t.Fatal(err)
	}
	fresh := newReq("sbs_phased", 99_999_999, body)
	claimSQL, claimArgs := ks.claimStarted(fresh)
	completeSQL, completeArgs := ks.complete(started)
	for _, c := range []struct {
		name string
		sql  string
		args []any
	}{
		{"key read", ks.read, []any{started.tenant, started.actor, started.key}},
		{"claim INSERT", claimSQL, claimArgs},
		{"fenced UPDATE (completion)", completeSQL, completeArgs},
	} {
		explain(t, p, c.name, c.sql, c.args)
	}
}

// TestLabExplainJournal shows the generic plan of the journal's completion written as a join
// to the key's CTE, on a journal of 20,000 rows.
func TestLabExplainJournal(t *testing.T) {
	requireLab(t)
	ctx := context.Background()
	ks := journal("cte")
	p := newDatabase(t, 2, nil)
	if err := setupKeys(ks, false)(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, `INSERT INTO pgsaga_call (tenant_id, actor_id, key, step, attempt, reference, deadline)
		SELECT 't-sbs', 'a-sbs', 'old-' || i, 'charged', 1, 'r', now() FROM generate_series(1, 20000) i;
		ANALYZE`); err != nil {
		t.Fatal(err)
	}
	r := newReq("sbs_phased", 1, body)
	sql, args := ks.claimStarted(r)
	if _, err := p.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
	sql, args = ks.complete(r)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		conn, err := p.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		explain(t, conn, "journal completion joined to the key's CTE, "+mode, sql, args)
		if _, err := conn.Exec(ctx, "RESET plan_cache_mode"); err != nil {
			t.Fatal(err)
		}
		conn.Release()
	}
}

// explain prints EXPLAIN (ANALYZE, BUFFERS) of sql run as a generic plan would be after pgx
// prepared it, in a transaction rolled back afterwards (run twice: the second, warm, is shown).
func explain(t *testing.T, p interface {
	Begin(context.Context) (pgx.Tx, error)
}, name, sql string, args []any) {
	t.Helper()
	ctx := context.Background()
	var plan []string
	for range 2 {
		err := pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, VERBOSE OFF, SETTINGS OFF) "+sql, args...)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			return errRollback
		})
		if err != nil && err != errRollback {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fmt.Fprintf(os.Stdout, "\n#### %s\n\n```\n%s\n```\n", name, strings.Join(plan, "\n"))
}

var errRollback = fmt.Errorf("rollback")
