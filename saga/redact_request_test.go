package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Config.RedactRequest: the stored request body has the card number removed, and a resume still
// finishes the key from what was kept (the amount in the body, the token the first phase
// saved). The fingerprint is of the body as it arrived: the same request is still a replay,
// another card number on the key still a 422.
func TestRedactRequestKeepsResumeWorking(t *testing.T) {
	t.Parallel()
	type payment struct {
		Amount     int    `json:"amount"`
		CardNumber string `json:"card_number,omitempty"`
	}
	token := phases.Value[string]("card_token")
	var (
		mu       sync.Mutex
		seen     []string // the body each execution of the second phase read
		failNext = true
	)
	op := &phases.Operation{Name: "charge_card", Steps: []phases.Step{
		// The card number is exchanged for a token at once, and the token saved.
		phases.Atomic("card_vaulted", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			var p payment
			if err := run.Decode(&p); err != nil {
				return err
			}
			if p.CardNumber == "" {
				return errors.New("the first phase always sees the card number")
			}
			return token.Set(run, "tok_"+p.CardNumber[len(p.CardNumber)-4:])
		}),
		// A later phase reads the amount from the body and the token from the saved values.
		phases.Atomic("charged", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
			mu.Lock()
			seen = append(seen, string(run.Body()))
			fail := failNext
			failNext = false
			mu.Unlock()
			if fail {
				return errors.New("the card network is down")
			}
			var p payment
			if err := run.Decode(&p); err != nil {
				return phases.Permanent(err)
			}
			tok, err := token.Get(run)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO effects (key, what) VALUES ($1, $2)`, run.Key(), tok); err != nil {
				return err
			}
			return run.Respond(http.StatusCreated, map[string]any{"amount": p.Amount, "card": tok})
		}),
	}}
	redact := func(operation string, body []byte) []byte {
		require.Equal(t, "charge_card", operation)
		var p payment
		if err := json.Unmarshal(body, &p); err != nil {
			return nil // keep it: the operation refuses it anyway
		}
		p.CardNumber = ""
		out, _ := json.Marshal(p)
		return out
	}
	_, db := newClient(t)
	c, err := saga.NewClient(&saga.Config{DB: db.Pool, Operations: []*phases.Operation{op}, RedactRequest: redact})
	require.NoError(t, err)
	key := uuid.NewString()
	body := `{"amount": 2500, "card_number": "4242424242424242"}`
	req := func(body string) *saga.Request {
		return &saga.Request{Scope: saga.Scope{Tenant: "t1", Actor: "a1"}, Key: key, Method: "POST", Path: "/charges", Body: []byte(body)}
	}

	_, err = c.Run(t.Context(), "charge_card", req(body))
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient, "the second phase failed: the key stays started")
	var stored []byte
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT request_body FROM pgsaga_key WHERE key = $1`, key).Scan(&stored))
	require.JSONEq(t, `{"amount": 2500}`, string(stored))
	require.NotContains(t, string(stored), "4242")
	require.Contains(t, seen[0], "4242424242424242", "the first execution's steps see the body as it arrived")

	res, err := c.Resume(t.Context(), saga.Scope{Tenant: "t1", Actor: "a1"}, key, nil)
	require.NoError(t, err, "a resume finishes the key from the redacted body")
	require.Equal(t, http.StatusCreated, res.Response.Status)
	require.JSONEq(t, `{"amount": 2500, "card": "tok_4242"}`, string(res.Response.Body))
	require.Len(t, seen, 2)
	require.NotContains(t, seen[1], "4242", "a resumed execution sees the redacted body")
	require.Equal(t, 1, countEffects(t, db, key))

	again, err := c.Run(t.Context(), "charge_card", req(body))
	require.NoError(t, err)
	require.True(t, again.Replayed, "the same request, fingerprinted as it arrived, is a replay")
	require.Equal(t, res.Response.Body, again.Response.Body)
	_, err = c.Run(t.Context(), "charge_card", req(strings.Replace(body, "4242424242424242", "5555555555554444", 1)))
	require.ErrorIs(t, err, saga.ErrKeyReused, "another card number on the key is another request")
	_, err = c.Run(t.Context(), "charge_card", req(`{"amount": 2500}`))
	require.ErrorIs(t, err, saga.ErrKeyReused, "the redacted body is not the request either")
	require.Equal(t, 1, countEffects(t, db, key))
}
