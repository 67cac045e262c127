package saga_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// A phased operation: reserve a seat (one transaction), ask a ticketing system outside the
// database for a ticket (a call, journaled before it is sent, under a key derived from the
// reservation), record the ticket and answer (a second transaction). The first attempt's call
// fails; the key stays started, and the retry, once due, finishes it from its recovery point,
// with the journal telling the call what the earlier attempt did.
func ExampleClient_Run_phased() {
	ctx := context.Background()
	db, err := sagatest.OpenDB(ctx, "example_phased")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE seats (id bigserial PRIMARY KEY, ticket text)`); err != nil {
		fmt.Println(err)
		return
	}

	seat := phases.Value[int64]("seat")
	ticket := phases.Value[string]("ticket")
	ticketing := map[string]string{} // the outside system: one ticket per reference
	down := true                     // and, the first time, unreachable
	book := &phases.Operation{
		Name: "book_seat",
		Steps: []phases.Step{
			phases.Atomic("seat_reserved", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO seats DEFAULT VALUES RETURNING id`).Scan(&id); err != nil {
					return err
				}
				return seat.Set(run, id)
			}),
			phases.Call("ticket_issued", func(ctx context.Context, run *phases.Run) error {
				fmt.Println("earlier attempts of the call:", len(run.PriorCalls()))
				if down {
					down = false
					run.RecordCall(phases.CallOutcomeFailedBefore, "")
					return phases.RetryAfter(0, errors.New("ticketing is unreachable"))
				}
				t, ok := ticketing[run.Reference()]
				if !ok {
					t = fmt.Sprintf("T-%d", len(ticketing)+1)
					ticketing[run.Reference()] = t
				}
				run.RecordCall(phases.CallOutcomeSucceeded, t)
				return ticket.Set(run, t)
			}).WithReference(func(run *phases.Run) (string, error) {
				id, err := seat.Get(run)
				return fmt.Sprintf("seat:%d", id), err
			}),
			phases.Atomic("ticket_recorded", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				id, err := seat.Get(run)
				if err != nil {
					return err
				}
				t, err := ticket.Get(run)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `UPDATE seats SET ticket = $2 WHERE id = $1`, id, t); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]any{"seat": id, "ticket": t})
			}),
		},
	}
	client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{book}})
	if err != nil {
		fmt.Println(err)
		return
	}
	scope := saga.Scope{Tenant: "acme", Actor: "alice"}
	req := &saga.Request{Scope: scope, Key: "book-7d1f2c", Method: "POST", Path: "/seats", Body: []byte(`{}`)}

	_, err = client.Run(ctx, "book_seat", req)
	var unavailable *saga.TransientError
	fmt.Println("first attempt unavailable:", errors.As(err, &unavailable))

	res, err := client.Run(ctx, "book_seat", req)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Response.Status, string(res.Response.Body), "resumed:", res.Resumed)

	k, err := client.KeyGet(ctx, scope, "book-7d1f2c")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range k.Calls {
		fmt.Printf("call %s attempt %d reference %s: %s\n", c.Step, c.Attempt, c.Reference,
			strings.TrimSpace(string(c.Outcome)+" "+c.ProviderID))
	}
	// Output:
	// earlier attempts of the call: 0
	// first attempt unavailable: true
	// earlier attempts of the call: 1
	// 201 {"seat":1,"ticket":"T-1"} resumed: true
	// call ticket_issued attempt 1 reference seat:1: failed_before
	// call ticket_issued attempt 2 reference seat:1: succeeded T-1
}
