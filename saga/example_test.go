package saga_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/saga/sagatest"
)

// A single-transaction operation: the claim of the key, the effect and the stored response
// commit together. A retry with the same key replays the stored response byte for byte; the
// same key with another body is refused.
func Example() {
	ctx := context.Background()
	db, err := sagatest.OpenDB(ctx, "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE notes (id bigserial PRIMARY KEY, text text NOT NULL)`); err != nil {
		fmt.Println(err)
		return
	}

	addNote := &phases.Operation{
		Name: "add_note",
		Steps: []phases.Step{
			phases.Atomic("note_added", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				var in struct{ Text string }
				if err := run.Decode(&in); err != nil {
					return phases.Reject(http.StatusBadRequest, "invalid_request", err.Error())
				}
				var id int64
				if err := tx.QueryRow(ctx, `INSERT INTO notes (text) VALUES ($1) RETURNING id`, in.Text).Scan(&id); err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, map[string]any{"id": id, "text": in.Text})
			}),
		},
	}
	client, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{addNote}})
	if err != nil {
		fmt.Println(err)
		return
	}

	req := func(body string) *saga.Request {
		return &saga.Request{
			Scope:  saga.Scope{Tenant: "acme", Actor: "alice"},
			Key:    "5f0c6a4e-2b8e-4f7a-9d3c-1e2f3a4b5c6d",
			Method: "POST", Path: "/notes", Body: []byte(body),
		}
	}
	for _, body := range []string{`{"text":"buy milk"}`, `{ "text": "buy milk" }`, `{"text":"buy bread"}`} {
		res, err := client.Run(ctx, "add_note", req(body))
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(res.Response.Status, string(res.Response.Body), "replayed:", res.Replayed)
	}
	var notes int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&notes)
	fmt.Println("notes:", notes)
	// Output:
	// 201 {"id":1,"text":"buy milk"} replayed: false
	// 201 {"id":1,"text":"buy milk"} replayed: true
	// error: this Idempotency-Key was already used for a different request
	// notes: 1
}
