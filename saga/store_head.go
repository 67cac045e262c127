package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgsaga/pgsaga/internal/keystore"
	"github.com/pgsaga/pgsaga/internal/runstate"
)

// The engine's reads of one key: the request path's narrow read (the head: what answering a
// retry needs), the whole row for a resume or an operator, and the call journal rows that
// takeovers and renewals return.

// keyHead is a stored key as a retry sees it.
type keyHead struct {
	Operation, Method, Path string
	RequestHash             []byte
	Status                  KeyStatus
	ParkedReason            ParkedReason
	LastError               string
	Response                *Response
	// LeaseLeft is how long an execution still holds the key's lease (on the database clock);
	// zero when none does.
	LeaseLeft time.Duration
	// NextAttemptIn is how long until the key's next attempt is due (not positive: it is due).
	NextAttemptIn time.Duration
	// RecoveryPoint is where the key stands, and SinceWrite how long ago it was last written
	// (on the database clock): what a 409's estimate starts from.
	RecoveryPoint string
	SinceWrite    time.Duration

	// row is what a read scans into, in the head itself, so that a read allocates only what it
	// keeps.
	row keystore.ReadHeadRow
}

// readHead reads key's head (keystore's ReadHead) into h; found is false when there is no such
// key.
func readHead(ctx context.Context, q keystore.Querier, scope Scope, key string, h *keyHead) (found bool, err error) {
	st := keystore.BindReadHead(&keystore.ReadHeadParams{TenantID: scope.Tenant, ActorID: scope.Actor, Key: key})
	defer st.Release()
	err = st.QueryRow(ctx, q, &h.row)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("error reading key: %w", err)
	}
	r := &h.row
	h.Operation, h.Method, h.Path, h.RequestHash = r.Operation, r.Method, r.Path, r.RequestHash
	h.Status, h.ParkedReason, h.LastError = KeyStatus(r.Status), ParkedReason(r.ParkedReason), r.LastError
	h.LeaseLeft = time.Duration(r.LeaseLeftUs) * time.Microsecond
	h.NextAttemptIn = time.Duration(r.NextAttemptInUs) * time.Microsecond
	h.RecoveryPoint, h.SinceWrite = r.RecoveryPoint, time.Duration(r.SinceWriteUs)*time.Microsecond
	h.Response = nil
	if r.ResponseStatus.Valid {
		if h.Response, err = storedResponseOf(int(r.ResponseStatus.Int32), r.ResponseHeaders, r.ResponseBody); err != nil {
			return false, fmt.Errorf("error reading key: %w", err)
		}
	}
	return true, nil
}

// storedResponseOf decodes a stored response.
func storedResponseOf(status int, header, body []byte) (*Response, error) {
	r := &Response{Status: status, Body: body}
	var err error
	if r.Header, err = decodeHeader(header); err != nil {
		return nil, fmt.Errorf("error decoding stored headers: %w", err)
	}
	return r, nil
}

// queryer is what the store needs: a pool, a connection or a transaction.
type queryer = keystore.Querier

// keyOf converts a stored key (its row, whether its lease is held, and the database clock when
// it was read).
func keyOf(r *keystore.PgsagaKey, leased bool, dbNow pgtype.Timestamptz) (*Key, error) {
	k := &Key{Scope: Scope{Tenant: r.TenantID, Actor: r.ActorID}, Key: r.Key, Operation: r.Operation,
		Method: r.Method, Path: r.Path, RequestHash: r.RequestHash, RequestBody: r.RequestBody,
		Status: KeyStatus(r.Status), RecoveryPoint: r.RecoveryPoint, LockedUntil: timeOrNil(r.LockedUntil),
		Attempts: int(r.Attempts), attemptsUnspent: int(r.AttemptsUnspent), LastError: r.LastError.String,
		NextAttemptAt: r.NextAttemptAt.Time, ParkedReason: ParkedReason(r.ParkedReason.String),
		CompletedAt: timeOrNil(r.CompletedAt), ExpiresAt: timeOrNil(r.ExpiresAt), CreatedAt: r.CreatedAt.Time,
		UpdatedAt: r.UpdatedAt.Time, Leased: leased, DBNow: dbNow.Time}
	if err := json.Unmarshal(r.State, &k.State); err != nil {
		return nil, fmt.Errorf("error decoding saved state: %w", err)
	}
	if r.ResponseStatus.Valid {
		var err error
		if k.Response, err = storedResponseOf(int(r.ResponseStatus.Int32), r.ResponseHeaders, r.ResponseBody); err != nil {
			return nil, err
		}
	}
	return k, nil
}

func timeOrNil(t pgtype.Timestamptz) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}

// lookupKey reads one whole key; ErrKeyNotFound when there is none.
func lookupKey(ctx context.Context, q keystore.DBTX, scope Scope, key string) (*Key, error) {
	r, err := keystore.New(q).LookupKey(ctx, &keystore.LookupKeyParams{TenantID: scope.Tenant, ActorID: scope.Actor, Key: key})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("error looking up key: %w", err)
	}
	return keyOf(&r.PgsagaKey, r.Leased, r.DbNow)
}

// callJSON is a journal row as the store's statements encode it (json_build_object).
type callJSON struct {
	Step          string     `json:"step"`
	Attempt       int        `json:"attempt"`
	Reference     *string    `json:"reference"`
	StartedAt     time.Time  `json:"started_at"`
	EndedAt       *time.Time `json:"ended_at"`
	Deadline      time.Time  `json:"deadline"`
	MaxInFlightMs *int64     `json:"max_in_flight_ms"`
	Outcome       *string    `json:"outcome"`
	ProviderID    *string    `json:"provider_id"`
}

// decodeCalls decodes journal rows (callJSON), keeping those keep accepts (all when nil).
func decodeCalls(raw []byte, keep func(*callJSON) bool) ([]runstate.CallRecord, error) {
	if len(raw) == 0 || string(raw) == "[]" {
		return nil, nil
	}
	var rows []callJSON
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, fmt.Errorf("error decoding the call journal: %w", err)
	}
	var out []runstate.CallRecord
	for i := range rows {
		r := &rows[i]
		if keep != nil && !keep(r) {
			continue
		}
		out = append(out, runstate.CallRecord{Step: r.Step, Attempt: r.Attempt, Reference: deref(r.Reference),
			StartedAt: r.StartedAt, EndedAt: r.EndedAt, Deadline: r.Deadline,
			MaxInFlight: time.Duration(deref(r.MaxInFlightMs)) * time.Millisecond,
			Outcome:     runstate.CallOutcome(deref(r.Outcome)), ProviderID: deref(r.ProviderID)})
	}
	return out, nil
}

// onLocalClock moves journal rows' times from the database's clock to this process's: the
// database read dbNow while the statement that returned them ran, and the process received
// them at localNow. The offset counts the statement's way back to the process as clock
// difference, which moves every time later: the safe direction for "when did an attempt stop
// sending", the one thing these times decide. This is the only place the two clocks meet.
func onLocalClock(calls []runstate.CallRecord, dbNow, localNow time.Time) []runstate.CallRecord {
	offset := localNow.Sub(dbNow)
	for i := range calls {
		c := &calls[i]
		c.StartedAt = c.StartedAt.Add(offset)
		c.Deadline = c.Deadline.Add(offset)
		if c.EndedAt != nil {
			end := c.EndedAt.Add(offset)
			c.EndedAt = &end
		}
	}
	return calls
}

// keyWrittenBy reports whether the key's row was last written by the execution holding token:
// for a key finished by its first phase, whether that execution's claim is the one that stored
// it. Only an execution that lost its COMMIT's answer asks.
func keyWrittenBy(ctx context.Context, q keystore.DBTX, scope Scope, key string, token *pgtype.UUID) (bool, error) {
	ours, err := keystore.New(q).KeyWrittenBy(ctx, &keystore.KeyWrittenByParams{
		LeaseToken: *token, TenantID: scope.Tenant, ActorID: scope.Actor, Key: key})
	if err != nil {
		return false, fmt.Errorf("error reading the key's writer: %w", err)
	}
	return ours, nil
}
