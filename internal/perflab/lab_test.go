package perflab

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The experiments of PERF.md. Each prints a table of interleaved variants with ratios to the
// first. Run one with: go test ./internal/perflab -run 'TestLab/schema' -lab -v
func TestLab(t *testing.T) {
	requireLab(t)
	l := defaultLab()
	v := func(name string, ks keyStore, shape func(keyStore) func2) variant {
		if name == "" {
			name = ks.name
		}
		return variant{name: name, setup: setupKeys(ks, false), op: shape(ks)}
	}
	rec := lean("recommended: lean statements, PK + resumable index, no trigger", recommendedDDL())

	t.Run("shapes", func(t *testing.T) {
		tk := today()
		l.compare(t, os.Stdout, "phased: round-trip shapes (today's schema and statements)", []variant{
			floor2rt(),
			v("today: BEGIN+read; claim+COMMIT; BEGIN; fenced+COMMIT", tk, phasedToday),
			v("read; claim; fenced (autocommit)", tk, phasedLean),
			v("claim+read (ON CONFLICT DO NOTHING); fenced", tk, claimFirst),
		})
		l.compare(t, os.Stdout, "single transaction: round-trip shapes (today's schema and statements)", []variant{
			handIdem(),
			v("today: BEGIN+read; INSERT; claim+COMMIT", tk, singleToday),
			v("read; BEGIN+INSERT; claim+COMMIT", tk, singleLazy),
		})
		l.compare(t, os.Stdout, "replay: round-trip shapes", []variant{
			{name: "today: BEGIN+read; ROLLBACK", setup: setupKeys(tk, true), op: replayToday(tk)},
			{name: "read (autocommit)", setup: setupKeys(tk, true), op: replayRead(tk)},
			{name: "narrow read (autocommit): no body, no state", setup: setupKeys(tk, true), op: replayNarrow()},
		})
	})

	t.Run("coldstart", func(t *testing.T) {
		tk := today()
		l.compare(t, os.Stdout, "phased (today's statements): a key table filled and analyzed, or empty and analyzed at the start", []variant{
			{name: "20,000 keys, analyzed", setup: setupKeysPrefill(tk, false, 20_000), op: phasedLean(tk)},
			{name: "empty, analyzed", setup: setupKeysPrefill(tk, false, 0), op: phasedLean(tk)},
		})
	})

	t.Run("schema", func(t *testing.T) {
		tddl := todayDDL()
		l.compare(t, os.Stdout, "phased (read; claim; fenced, autocommit): the key table", []variant{
			v("", today(), phasedLean),
			v("", todayUUIDFixed(), phasedLean),
			v("", lean("lean statements", tddl), phasedLean),
			v("", lean("lean, no trigger", tddl+dropTrigger), phasedLean),
			v("", lean("lean, no trigger, no created_at index", tddl+dropTrigger+dropCreated), phasedLean),
			v("", rec, phasedLean),
			v("", lean("recommended, no CHECKs", recommendedDDL()+dropChecks), phasedLean),
			v("", lean("recommended, fillfactor 80", recommendedDDL()+fillfactor80), phasedLean),
			v("", inflight("in-flight table, key row HOT", ""), phasedLean),
			v("", inflight("in-flight table, key row HOT, fillfactor 80", fillfactor80), phasedLean),
			floor2rt(),
		})
	})

	t.Run("single", func(t *testing.T) {
		tddl := todayDDL()
		l.compare(t, os.Stdout, "single transaction (read; BEGIN+INSERT; claim+COMMIT): the key table", []variant{
			handIdem(),
			v("", today(), singleLazy),
			v("", lean("lean statements", tddl), singleLazy),
			v("", rec, singleLazy),
			v("", lean("recommended, no CHECKs", recommendedDDL()+dropChecks), singleLazy),
		})
	})

	t.Run("checks", func(t *testing.T) {
		ddl := recommendedDDL()
		l.compare(t, os.Stdout, "phased (read; claim; fenced): the CHECK constraints", []variant{
			v("", lean("both CHECKs (today)", ddl), phasedLean),
			v("", lean("identity CHECK only", ddl+dropStateCheck), phasedLean),
			v("", lean("state machine CHECK only", ddl+dropIdentityCheck), phasedLean),
			v("", lean("no CHECK", ddl+dropChecks), phasedLean),
			v("", lean("identity as domains, no state machine CHECK", ddl+identityDomains), phasedLean),
		})
	})

	t.Run("notify", func(t *testing.T) {
		tddl := todayDDL()
		l.compare(t, os.Stdout, "phased: NOTIFY on completion", []variant{
			v("", lean("trigger (today)", tddl+minimalIndexes), phasedLean),
			v("", notifyAlways(), phasedLean),
			v("", notifyWhenWaited(), phasedLean),
			v("", lean("no NOTIFY at all", recommendedDDL()), phasedLean),
		})
	})

	t.Run("fence", func(t *testing.T) {
		tk := today()
		tk.ddl = recommendedDDL()
		tk.name = "plpgsql pgsaga_lease_lost in CASE (today)"
		div := rec
		div.name = "1/count(*) (division by zero raises)"
		l.compare(t, os.Stdout, "fence of a phase with a business statement: claim; BEGIN+INSERT; fenced+COMMIT", []variant{
			v("", tk, func(ks keyStore) func2 { return phasedWithStatement(ks, false) }),
			v("", div, func(ks keyStore) func2 { return phasedWithStatement(ks, false) }),
			v("plain UPDATE, row count checked in Go, then COMMIT", rec, func(ks keyStore) func2 { return phasedWithStatement(ks, true) }),
		})
	})

	t.Run("execmode", func(t *testing.T) {
		withMode := func(name string, ks keyStore, m pgx.QueryExecMode) variant {
			x := v(name, ks, phasedLean)
			x.pool = execMode(m)
			return x
		}
		tk := today()
		l.compare(t, os.Stdout, "phased: pgx exec modes and parameters", []variant{
			withMode("today, cache statement (pgx default)", tk, pgx.QueryExecModeCacheStatement),
			withMode("today, cache describe", tk, pgx.QueryExecModeCacheDescribe),
			withMode("today, describe exec", tk, pgx.QueryExecModeDescribeExec),
			withMode("today, exec (unnamed, no describe)", jsonAsText(todayUUIDFixed()), pgx.QueryExecModeExec),
			withMode("lean statements, cache statement", lean("", todayDDL()), pgx.QueryExecModeCacheStatement),
		})
	})

	t.Run("body", func(t *testing.T) {
		big := []byte(`{"amount":100,"note":"` + strings.Repeat("x", 1000) + `"}`)
		huge := []byte(`{"amount":100,"note":"` + strings.Repeat("x", 4000) + `"}`)
		withBody := func(name string, ks keyStore, b []byte) variant {
			return variant{name: name, setup: setupKeys(ks, false), op: phasedLeanBody(ks, b)}
		}
		l.compare(t, os.Stdout, "phased: where the request body lives", []variant{
			withBody("in the key row, 14 B", rec, body),
			withBody("in pgsaga_request, 14 B", companionBody(), body),
			withBody("in the key row, 1 KB", rec, big),
			withBody("in pgsaga_request, 1 KB", companionBody(), big),
			withBody("in the key row, 4 KB (TOAST)", rec, huge),
			withBody("in pgsaga_request, 4 KB (TOAST)", companionBody(), huge),
		})
	})

	t.Run("journal", func(t *testing.T) {
		l.compare(t, os.Stdout, "phased: the call journal (one row per request, written with the claim, completed with the completion)", []variant{
			v("no journal", rec, phasedLean),
			v("", journal("cte"), phasedLean),
			v("journal: second statement in the same round trip", journal("pipeline"), journalPipelined),
			v("", journal("insert-only"), phasedLean),
			v("journal: success implied by the completion (no journal UPDATE)", journal("implied"), phasedLean),
			v("", journal("fk"), phasedLean),
			floor2rt(),
		})
	})

	t.Run("final", func(t *testing.T) {
		j := journal("cte")
		j.ddl += dropChecks
		j.name = "journal, no CHECK"
		ji := journal("implied")
		ji.ddl += dropChecks
		r := lean("", recommendedDDL()+dropChecks)
		l.compare(t, os.Stdout, "the design recommended in PERF.md (lean statements, PK + resumable index, no trigger, no CHECK)", []variant{
			floor2rt(),
			v("phased: read; claim+journal; fenced+journal", j, phasedLean),
			v("phased: claim+journal ON CONFLICT + read; fenced+journal", j, claimFirst),
			v("phased, success implied: claim+journal ON CONFLICT + read; fenced", ji, claimFirst),
			v("phased without the journal: claim+read; fenced", r, claimFirst),
			handIdem(),
			v("single: read; BEGIN+INSERT; claim+COMMIT", r, singleLazy),
			{name: "replay: narrow read", setup: setupKeys(r, true), op: replayNarrow()},
		})
	})

	t.Run("recommended", func(t *testing.T) {
		l.compare(t, os.Stdout, "the recommended design against the hand-written floors", []variant{
			floor2rt(),
			engineVariant("engine today: phased", "sbs_phased", false),
			v("phased today", today(), phasedToday),
			v("phased recommended (read; claim+journal; fenced+journal)", journal("cte"), phasedLean),
			v("phased recommended, claim first (claim+read; fenced+journal)", journal("cte"), claimFirst),
			handIdem(),
			engineVariant("engine today: single", "sbs_single", false),
			v("single today", today(), singleToday),
			v("single recommended (read; BEGIN+INSERT; claim+COMMIT)", rec, singleLazy),
		})
	})
}

// func2 is a request of a variant.
type func2 = func(context.Context, *pgxpool.Pool, int) error
