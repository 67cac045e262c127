package sagatest_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// Check proves an operation of your own exactly-once: a booking that writes a row, sends a
// confirmation to a system that keeps one message per key, and answers. The database is a
// throwaway one, migrated with pgsaga's tables; in a test, sagatest.NewDB(t) gives one, and
// TestMain calls sagatest.Main(m, opts).
func Example() {
	ctx := context.Background()
	db, err := sagatest.OpenDB(ctx, "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE seats (key text NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}

	var mu sync.Mutex
	confirmations := map[string]int{} // the outside system: one message per reference
	book := &phases.Operation{Name: "book", Steps: []phases.Step{
		phases.Atomic("booked", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			_, err := tx.Exec(ctx, `INSERT INTO seats (key) VALUES ($1)`, run.Key())
			return err
		}),
		phases.Call("confirmed", func(ctx context.Context, run *phases.Run) error {
			mu.Lock()
			defer mu.Unlock()
			confirmations[run.Reference()] = 1
			return nil
		}),
		phases.Atomic("answered", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			return run.Respond(http.StatusCreated, map[string]string{"booked": run.Key()})
		}),
	}}

	report, err := sagatest.Check(ctx, &sagatest.CheckParams{
		DB:        db.Pool,
		Operation: book,
		Request: func(_ context.Context, name string) (*saga.Request, error) {
			return &saga.Request{Scope: saga.Scope{Tenant: "acme", Actor: "alice"}, Key: "booking-" + name,
				Method: "POST", Path: "/bookings", Body: []byte(`{}`)}, nil
		},
		Effects: func(ctx context.Context, req *saga.Request) (map[string]int, error) {
			var seats int
			err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM seats WHERE key = $1`, req.Key).Scan(&seats)
			mu.Lock()
			defer mu.Unlock()
			sent := confirmations[phases.DefaultReference("acme", "alice", req.Key, "book", "confirmed")]
			return map[string]int{"seat": seats, "confirmation": sent}, err
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d cases, %d failures\n", len(report.Cases), len(report.Failures))
	// Output: 14 cases, 0 failures
}
