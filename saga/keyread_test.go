package saga_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// seedStates makes, in h's scope: completed keys "done-N", a started key whose process died
// ("stuck-0", lease expired), and a parked key ("parked-0").
func seedStates(t *testing.T, h *harness, completed int) {
	t.Helper()
	for i := range completed {
		_, err := h.client.Run(t.Context(), opReserve, h.req(fmt.Sprintf("done-%04d", i), `{}`))
		require.NoError(t, err)
	}
	h.points.Crash(chaos.BeforeStep(opReserve, "charge"))
	require.True(t, crash.Run(func() { _, _ = h.client.Run(t.Context(), opReserve, h.req("stuck-0000", `{}`)) }))
	h.expireLease("stuck-0000")
	parker := h.newClient(nil, (&reserveThenCharge{charge: func(*phases.Run) error {
		return phases.OutcomeUnknown(errors.New("nothing can tell"))
	}}).ops)
	_, err := parker.Run(t.Context(), opReserve, h.req("parked-0000", `{}`))
	require.ErrorAs(t, err, new(*saga.ParkedError))
}

func TestKeyListPagesNewestFirstWithoutRepeats(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, (&reserveThenCharge{}).ops)
	seedStates(t, h, 23)

	var (
		seen   = map[string]bool{}
		cursor string
		pages  int
		last   time.Time
	)
	for {
		page, err := h.client.KeyList(t.Context(), &saga.KeyListParams{Limit: 10, Cursor: cursor})
		require.NoError(t, err)
		pages++
		for _, k := range page.Keys {
			require.False(t, seen[k.Key], "%s listed twice", k.Key)
			seen[k.Key] = true
			if !last.IsZero() {
				require.False(t, k.CreatedAt.After(last), "newest first")
			}
			last = k.CreatedAt
			require.Nil(t, k.Calls, "listings carry no calls")
		}
		if pages == 1 {
			// Keys made after the listing began do not shift the pages.
			_, err := h.client.Run(t.Context(), opReserve, h.req("late-0000", `{}`))
			require.NoError(t, err)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	require.Equal(t, 3, pages)
	require.Len(t, seen, 25)
	require.False(t, seen["late-0000"])
}

func TestKeyListFilters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, (&reserveThenCharge{}).ops)
	seedStates(t, h, 3)
	other := h.scope
	other.Tenant = "tenant-2"
	_, err := h.client.Run(t.Context(), opReserve, &saga.Request{Scope: other, Key: "done-other", Method: "POST", Path: "/test", Body: []byte(`{}`)})
	require.NoError(t, err)

	keysOf := func(p *saga.KeyListParams) []string {
		t.Helper()
		page, err := h.client.KeyList(t.Context(), p)
		require.NoError(t, err)
		var out []string
		for _, k := range page.Keys {
			out = append(out, k.Key)
		}
		return out
	}
	require.ElementsMatch(t, []string{"stuck-0000", "parked-0000"}, keysOf(&saga.KeyListParams{Stuck: true}))
	require.Equal(t, []string{"parked-0000"}, keysOf(&saga.KeyListParams{State: saga.KeyStatusParked}))
	require.Equal(t, []string{"stuck-0000"}, keysOf(&saga.KeyListParams{State: saga.KeyStatusStarted}))
	require.Equal(t, []string{"done-other"}, keysOf(&saga.KeyListParams{Tenant: "tenant-2"}))
	require.ElementsMatch(t, []string{"done-0000", "done-0001", "done-0002", "done-other"}, keysOf(&saga.KeyListParams{KeyPrefix: "done-"}))
	require.Empty(t, keysOf(&saga.KeyListParams{Operation: "no_such_operation"}))
	require.Len(t, keysOf(&saga.KeyListParams{Operation: opReserve, Tenant: h.scope.Tenant}), 5)
	// A prefix is not a pattern.
	require.Empty(t, keysOf(&saga.KeyListParams{KeyPrefix: "done_%"}))

	for name, p := range map[string]*saga.KeyListParams{
		"bad cursor":     {Cursor: "not-a-cursor"},
		"forged cursor":  {Cursor: "e30"},
		"negative limit": {Limit: -1},
		"huge limit":     {Limit: 10_001},
		"bad state":      {State: "stuck"},
	} {
		_, err := h.client.KeyList(t.Context(), p)
		require.ErrorAs(t, err, new(*saga.InvalidRequestError), name)
	}
}

func TestKeyCountsAndEstimate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, (&reserveThenCharge{}).ops)
	seedStates(t, h, 4)
	c, err := h.client.KeyCount(t.Context())
	require.NoError(t, err)
	require.Equal(t, map[saga.KeyStatus]int{saga.KeyStatusCompleted: 4, saga.KeyStatusStarted: 1, saga.KeyStatusParked: 1}, c.ByState)
	require.Equal(t, c.ByState, c.ByOperation[opReserve])
	require.Equal(t, 2, c.Stuck)
	require.NotNil(t, c.OldestStuck)
	require.Equal(t, "stuck-0000", c.OldestStuck.Key, "the one that has waited longest since its last change")

	e, err := h.client.Internal(sibling.Token{}).KeyEstimate(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, e.Started)
	require.Equal(t, 1, e.Parked)
	require.Equal(t, 2, e.Stuck)
}

func TestKeyDeleteExpiredTakesTheJournalAlongAndKeepsOpenKeys(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, (&reserveThenCharge{}).ops)
	seedStates(t, h, 5)
	ctx := t.Context()

	n, err := h.client.KeyDeleteExpired(ctx, nil)
	require.NoError(t, err)
	require.Zero(t, n, "nothing is past its retention yet")

	zero := time.Duration(0)
	n, err = h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: &zero, DryRun: true})
	require.NoError(t, err)
	require.Equal(t, 5, n, "a dry run counts every completed key")
	require.Equal(t, 7, h.count(`SELECT count(*) FROM pgsaga_key`))

	// Past their own expiry, batch after batch along the expiry index.
	_, err = h.db.Pool.Exec(ctx, `UPDATE pgsaga_key SET expires_at = now() - interval '1 hour' - key_order * interval '1 ms'
		FROM (SELECT key AS k, row_number() OVER (ORDER BY key) AS key_order FROM pgsaga_key) o
		WHERE key = o.k AND status = 'completed' AND key <> 'done-0004'`)
	require.NoError(t, err)
	var batches []int
	n, err = h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{BatchSize: 2, OnBatch: func(d int) { batches = append(batches, d) }})
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.Equal(t, []int{2, 4, 4}, batches)
	require.Equal(t, 3, h.count(`SELECT count(*) FROM pgsaga_key`), "the key not yet expired stays")

	// By age, whatever each key's expiry.
	n, err = h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: &zero, BatchSize: 2})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, 2, h.count(`SELECT count(*) FROM pgsaga_key`), "started and parked keys are never deleted")
	require.Zero(t, h.count(`SELECT count(*) FROM pgsaga_call_journal WHERE key LIKE 'done-%'`), "the journal goes with its key")
	require.Equal(t, 2, h.count(`SELECT count(*) FROM pgsaga_call_journal`), "the open keys keep theirs")

	negative := -time.Second
	_, err = h.client.KeyDeleteExpired(ctx, &saga.KeyDeleteExpiredParams{OlderThan: &negative})
	require.ErrorContains(t, err, "OlderThan")
}

// The listing's index on created_at is a BRIN: a listing looks at a recent window, then widens
// it. Keys spread over years, some in the same instant, are listed as a listing with no window
// would list them: newest first, ties by scope and key, each once, across pages.
func TestKeyListAcrossWindows(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, (&reserveThenCharge{}).ops)
	ages := []time.Duration{0, time.Minute, 2 * time.Hour, 2 * time.Hour, 2 * time.Hour, 3 * 24 * time.Hour,
		90 * 24 * time.Hour, 4 * 365 * 24 * time.Hour, 20 * 365 * 24 * time.Hour}
	for i, age := range ages {
		key := fmt.Sprintf("aged-%04d", i)
		_, err := h.client.Run(t.Context(), opReserve, h.req(key, `{}`))
		require.NoError(t, err)
		_, err = h.db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET created_at = date_trunc('second', now()) - $2::bigint * interval '1 millisecond' WHERE key = $1`,
			key, age.Milliseconds())
		require.NoError(t, err)
	}
	var want []string
	rows, err := h.db.Pool.Query(t.Context(), `SELECT key FROM pgsaga_key ORDER BY created_at DESC, tenant_id DESC, actor_id DESC, key DESC`)
	require.NoError(t, err)
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		want = append(want, k)
	}
	require.NoError(t, rows.Err())
	for _, limit := range []int{1, 2, 4, 100} {
		var got []string
		cursor := ""
		for {
			page, err := h.client.KeyList(t.Context(), &saga.KeyListParams{Limit: limit, Cursor: cursor})
			require.NoError(t, err)
			for _, k := range page.Keys {
				got = append(got, k.Key)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		require.Equal(t, want, got, "pages of %d", limit)
	}
}
