package sagatest_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/migrations"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

func TestMain(m *testing.M) {
	sagatest.Main(m, &sagatest.DBOpts{
		Migrations: &migrations.MigrateOpts{SkipRiver: true},
		Setup: func(ctx context.Context, pool *pgxpool.Pool) error {
			_, err := pool.Exec(ctx, `CREATE TABLE booking (key text NOT NULL, what text NOT NULL)`)
			return err
		},
	})
}

// mailer is an outside system: with keys it sends a message once per key (like a provider with
// idempotency keys); without, every request sends one.
type mailer struct {
	mu    sync.Mutex
	keyed bool
	seen  map[string]bool
	sent  map[string]int
	asked map[string]int
}

func newMailer(keyed bool) *mailer {
	return &mailer{keyed: keyed, seen: map[string]bool{}, sent: map[string]int{}, asked: map[string]int{}}
}

func (m *mailer) send(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked[key]++
	if m.keyed && m.seen[key] {
		return
	}
	m.seen[key] = true
	m.sent[key]++
}

func (m *mailer) count(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent[key]
}

// booking writes a row, sends a confirmation under a key derived from the idempotency key, and
// writes the answer.
func booking(m *mailer) *phases.Operation {
	return &phases.Operation{Name: "book", Steps: []phases.Step{
		phases.Atomic("booked", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `INSERT INTO booking (key, what) VALUES ($1, 'seat')`, run.Key())
			return err
		}),
		phases.Call("confirmed", func(ctx context.Context, run *phases.Run) error {
			m.send("confirm:" + run.Key())
			return nil
		}).WithReference(func(run *phases.Run) (string, error) { return "confirm:" + run.Key(), nil }),
		phases.Atomic("answered", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `INSERT INTO booking (key, what) VALUES ($1, 'receipt')`, run.Key())
			if err != nil {
				return err
			}
			return run.Respond(http.StatusCreated, map[string]string{"booked": run.Key()})
		}),
	}}
}

func checkParams(prefix string, db *dbtest.DB, m *mailer) *sagatest.CheckParams {
	return &sagatest.CheckParams{
		DB:        db.Pool,
		Operation: booking(m),
		Request: func(_ context.Context, name string) (*saga.Request, error) {
			return &saga.Request{Scope: saga.Scope{Tenant: "t", Actor: "a"}, Key: prefix + "-" + name,
				Method: "POST", Path: "/bookings", Body: []byte(`{}`)}, nil
		},
		Effects: func(ctx context.Context, req *saga.Request) (map[string]int, error) {
			out := map[string]int{"confirmation sent": m.count("confirm:" + req.Key)}
			rows, err := db.Pool.Query(ctx, `SELECT what, count(*) FROM booking WHERE key = $1 GROUP BY what`, req.Key)
			if err != nil {
				return nil, err
			}
			var what string
			var n int
			_, err = pgx.ForEachRow(rows, []any{&what, &n}, func() error { out[what] = n; return nil })
			return out, err
		},
	}
}

// An operation whose call goes to a provider that honours keys passes: every effect once, at
// every crash point, by either way of recovering.
func TestCheckPassesAnExactlyOnceOperation(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	m := newMailer(true)
	report, err := sagatest.Check(t.Context(), checkParams("pass", db, m))
	require.NoError(t, err)
	require.Empty(t, report.Failures)
	require.Len(t, report.Cases, 2*(2*3+1), "before and after each of three steps, and a lost answer, by retry and by resume")
	crashed := 0
	for _, c := range report.Cases {
		if c.Crashed {
			crashed++
		}
		require.Equal(t, http.StatusCreated, c.Status)
		require.Equal(t, map[string]int{"seat": 1, "receipt": 1, "confirmation sent": 1}, c.Effects)
	}
	require.Equal(t, len(report.Cases), crashed, "every case crashed where it was meant to")
}

// The same operation against a provider without keys sends a second confirmation when the
// process dies after the call and before the next phase commits: Check must find it, at exactly
// those points.
func TestCheckFindsASeededDoubleEffect(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	m := newMailer(false)
	report, err := sagatest.Check(t.Context(), checkParams("seeded", db, m))
	require.NoError(t, err)
	require.NotEmpty(t, report.Failures)
	var points []string
	for _, f := range report.Failures {
		require.Contains(t, f, `effect "confirmation sent" happened 2 times, want 1`)
		points = append(points, strings.SplitN(strings.TrimPrefix(f, "crash "), ",", 2)[0])
	}
	require.ElementsMatch(t, []string{"after confirmed", "after confirmed", "before answered", "before answered",
		"after answered", "after answered"}, points,
		"a second confirmation exactly where the call acted and the phase recording it did not commit: %v", report.Failures)
}

func TestCheckRefusesIncompleteParams(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]*sagatest.CheckParams{
		"nil":          nil,
		"no db":        {Operation: booking(newMailer(true))},
		"no operation": {DB: &pgxpool.Pool{}},
	} {
		_, err := sagatest.Check(t.Context(), p)
		require.Error(t, err, name)
	}
}
