package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/internal/testkit/resumetest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

func TestNewResumerValidatesConfig(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	c := newClient(t, db.Pool, &saga.Config{})
	for _, tc := range []struct {
		name string
		cfg  *worker.ResumerConfig
		want string
	}{
		{"nil", nil, "Client is required"},
		{"no client", &worker.ResumerConfig{}, "Client is required"},
		{"negative batch", &worker.ResumerConfig{Client: c, BatchSize: -1}, "BatchSize must"},
		{"negative concurrency", &worker.ResumerConfig{Client: c, Concurrency: -2}, "Concurrency must"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := worker.NewResumer(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A payment whose process lost the gateway's answer after the charge was made (and gave up) is
// finished by the resumer: it asks the gateway first, finds the charge, and records it. One
// charge in the ledger, the invoice paid, the key completed with a 201.
func TestRunOnceFinishesCrashedPayment(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	gw := sim.New(nil)
	svc, err := payments.New(&payments.Config{Pool: db.Pool, Gateway: gw.Gateway(), GatewayRetries: 1})
	require.NoError(t, err)
	c := svc.Client()
	ctx := t.Context()

	inv, err := c.Run(ctx, payments.OpCreateInvoice, &saga.Request{Scope: scope, Key: "invoice-key-1", Method: "POST", Path: "/invoices",
		Body: []byte(`{"amount": 5000, "currency": "USD"}`)})
	require.NoError(t, err)
	var invoice struct{ ID string }
	require.NoError(t, json.Unmarshal(inv.Response.Body, &invoice))

	// The charge is made but both answers (the first try and the in-process retry with the same
	// key) are lost, and the gateway cannot be asked: the request gives up with the charge made.
	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = false })
	require.NoError(t, err)
	gw.LoseNext(2)
	_, err = c.Run(ctx, payments.OpCreatePayment, &saga.Request{Scope: scope, Key: "payment-key-1", Method: "POST", Path: "/payments",
		Body: []byte(`{"invoice_id": "` + invoice.ID + `", "amount": 2000}`)})
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	require.Equal(t, 1, gw.TotalCharges(), "the lost answer's charge exists")
	k := keyRow(t, c, "payment-key-1")
	require.Equal(t, saga.KeyStatusStarted, k.Status)
	require.Equal(t, "payment_created", k.RecoveryPoint)

	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = true })
	require.NoError(t, err)

	// Not due yet: saga scheduled the next attempt after a delay.
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c})
	require.NoError(t, err)
	res, err := r.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed, "the retry delay has not passed")
	// Make it due now (as if the delay passed), then resume.
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET locked_until = now() - interval '1 second', next_attempt_at = now() WHERE key = 'payment-key-1'`)
	require.NoError(t, err)
	res, err = r.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: 1, Completed: 1}, res)

	k = keyRow(t, c, "payment-key-1")
	require.Equal(t, saga.KeyStatusCompleted, k.Status)
	require.Equal(t, http.StatusCreated, k.Response.Status, string(k.Response.Body))
	require.Equal(t, 1, gw.TotalCharges(), "resuming must not charge again")
	var paid int
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT paid FROM invoices WHERE id = $1`, invoice.ID).Scan(&paid))
	require.Equal(t, 2000, paid)

	// Nothing left to do.
	res, err = r.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed)
}

// Three resumers, each with its own pool and client (as separate processes would be), drain
// 1,000 crashed keys concurrently: every key's external call runs once and its last phase
// commits once.
func TestConcurrentResumersResumeEachKeyOnce(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	keys := seedCrashed(t, db.Pool, "crashed", 1000)
	eff := newEffects()

	results := make([]*worker.RunResult, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range results {
		pool, err := pgxpool.New(t.Context(), db.URL)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c := newClient(t, pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
		r, err := worker.NewResumer(&worker.ResumerConfig{Client: c, BatchSize: 25, Concurrency: 4})
		require.NoError(t, err)
		wg.Go(func() { results[i], errs[i] = drain(t.Context(), r) })
	}
	wg.Wait()

	claimed := 0
	for i, res := range results {
		require.NoError(t, errs[i])
		require.Zero(t, res.Rescheduled+res.Parked, "resumer %d: %+v", i, res)
		claimed += res.Claimed
		t.Logf("resumer %d: %+v", i, res)
	}
	require.Equal(t, len(keys), claimed, "each key claimed exactly once across the resumers")
	for _, k := range keys {
		require.Equal(t, 1, eff.Count(k), "external calls for %s", k)
	}
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`))
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(DISTINCT key) FROM effect_rows`))
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed' AND attempts = 2`))
}

// A key whose call always fails transiently is retried on schedule and parked after
// MaxAttempts, with the last error; the resumer then leaves it alone.
func TestKeyThatAlwaysFailsIsParkedAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	eff := newEffects()
	eff.Fail = errFlaky
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}, MaxAttempts: 3,
		RetryDelay: func(int) time.Duration { return time.Hour }})
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c})
	require.NoError(t, err)
	ctx := t.Context()

	// Attempt 1: the request itself.
	_, err = c.Run(ctx, opEffect, &saga.Request{Scope: scope, Key: "always-fails", Method: "POST", Path: "/effects", Body: []byte(`{}`)})
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET next_attempt_at = now()`)
	require.NoError(t, err)

	// Attempt 2, by the resumer.
	res, err := r.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: 1, Rescheduled: 1}, res)
	k := keyRow(t, c, "always-fails")
	require.Equal(t, saga.KeyStatusStarted, k.Status)
	require.Equal(t, 2, k.Attempts)
	require.Contains(t, k.LastError, errFlaky.Error())

	// A scheduled delay is honoured: the key is not due until next_attempt_at.
	res, err = r.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed, "a key whose next attempt is in an hour is not due")
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET next_attempt_at = now()`)
	require.NoError(t, err)

	// Attempt 3 is the last: the key is parked.
	res, err = r.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: 1, Parked: 1}, res)
	k = keyRow(t, c, "always-fails")
	require.Equal(t, saga.KeyStatusParked, k.Status)
	require.Equal(t, 3, k.Attempts)
	require.Contains(t, k.LastError, "attempts exhausted (3 of 3)")
	require.Contains(t, k.LastError, errFlaky.Error())
	require.Equal(t, 3, eff.Count("always-fails"))

	// Parked keys are an operator's: the resumer never claims them, however old.
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET locked_until = now() - interval '1 day', next_attempt_at = now() - interval '1 day'`)
	require.NoError(t, err)
	res, err = r.RunOnce(ctx)
	require.NoError(t, err)
	require.Zero(t, res.Claimed)
	outcome, err := r.ResumeKey(ctx, sibling.KeyRef{Tenant: scope.Tenant, Actor: scope.Actor, Key: "always-fails"})
	require.NoError(t, err)
	require.Equal(t, worker.OutcomeSkipped, outcome)
	require.Equal(t, 3, eff.Count("always-fails"))
	require.Equal(t, 0, countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`))
}

// Keys with a live lease, completed keys and keys of operations the client does not know are
// not claimed.
func TestRunOnceClaimsOnlyDueKeysOfKnownOperations(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	seedCrashed(t, db.Pool, "due", 3)
	seedCrashed(t, db.Pool, "leased", 2)
	seedCrashed(t, db.Pool, "other", 2)
	ctx := t.Context()
	_, err := db.Pool.Exec(ctx, `UPDATE pgsaga_key SET locked_until = now() + interval '1 minute' WHERE key LIKE 'leased-%'`)
	require.NoError(t, err)
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET operation = 'not_registered' WHERE key LIKE 'other-%'`)
	require.NoError(t, err)

	eff := newEffects()
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c})
	require.NoError(t, err)

	res, err := drain(ctx, r)
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: 3, Completed: 3}, res)
	require.Equal(t, 4, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'started' AND attempts = 1`))

	outcome, err := r.ResumeKey(ctx, sibling.KeyRef{Tenant: scope.Tenant, Actor: scope.Actor, Key: "leased-00000"})
	require.NoError(t, err)
	require.Equal(t, worker.OutcomeSkipped, outcome, "a live lease is someone else's")
	outcome, err = r.ResumeKey(ctx, sibling.KeyRef{Tenant: scope.Tenant, Actor: scope.Actor, Key: "due-00000"})
	require.NoError(t, err)
	require.Equal(t, worker.OutcomeSkipped, outcome, "a completed key is not due")
	outcome, err = r.ResumeKey(ctx, sibling.KeyRef{Tenant: scope.Tenant, Actor: scope.Actor, Key: "no-such-key"})
	require.NoError(t, err)
	require.Equal(t, worker.OutcomeSkipped, outcome)
}

// Cancelling a pass mid-batch: the resume under way finishes, no further key is claimed (a key
// is claimed only when a slot is free to resume it at once), and another resumer finishes the
// rest.
func TestRunOnceCancelledMidBatchLosesNothing(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	keys := seedCrashed(t, db.Pool, "batch", 5)
	eff := newEffects()
	eff.Hold = make(chan struct{})
	eff.Entered = make(chan string, 10)
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c, BatchSize: 5, Concurrency: 1})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan *worker.RunResult, 1)
	go func() {
		res, err := r.RunOnce(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	first := <-eff.Entered
	cancel()
	close(eff.Hold)
	res := <-done
	require.Equal(t, &worker.RunResult{Claimed: 1, Completed: 1}, res)

	require.Equal(t, saga.KeyStatusCompleted, keyRow(t, c, first).Status)
	for _, k := range keys {
		if k == first {
			continue
		}
		row := keyRow(t, c, k)
		require.Equal(t, saga.KeyStatusStarted, row.Status)
		require.False(t, row.Leased, "%s was never claimed", k)
		require.Equal(t, 1, row.Attempts, "%s: an unclaimed key spends no attempt", k)
		require.Zero(t, eff.Count(k))
	}

	other, err := worker.NewResumer(&worker.ResumerConfig{Client: newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})})
	require.NoError(t, err)
	eff.Change(func(eff *resumetest.Effects) {
		eff.Entered = nil
	})
	res, err = drain(t.Context(), other)
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: 4, Completed: 4}, res)
	for _, k := range keys {
		require.Equal(t, 1, eff.Count(k), k)
	}
}

// TestRunOnceNeverStartsAKeyOnASpentLease: a pass that claimed a whole batch with one lease each
// and worked through it a few at a time would start the keys at the tail after their leases had
// run out — and another worker could take them at the same time. Every resume must start on a
// lease that still has most of its time.
func TestRunOnceNeverStartsAKeyOnASpentLease(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	keys := seedCrashed(t, db.Pool, "tail", 4)
	eff := newEffects()
	lease := time.Second
	var (
		mu   sync.Mutex
		left []time.Duration
	)
	c := newClient(t, db.Pool, &saga.Config{Lease: lease, Operations: []*phases.Operation{eff.Operation(nil)}})
	eff.Change(func(e *resumetest.Effects) {
		e.OnCall = func(ctx context.Context, key string) {
			var l time.Duration
			if err := db.Pool.QueryRow(ctx, `SELECT locked_until - clock_timestamp() FROM pgsaga_key WHERE key = $1`, key).Scan(&l); err != nil {
				t.Error(err)
			}
			mu.Lock()
			left = append(left, l)
			mu.Unlock()
			// Each call takes most of a lease: a batch claimed up front would be spent by the
			// time the tail started.
			time.Sleep(lease * 6 / 10)
		}
	})
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c, BatchSize: len(keys), Concurrency: 1})
	require.NoError(t, err)
	res, err := r.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: len(keys), Completed: len(keys)}, res)
	require.Len(t, left, len(keys))
	for i, l := range left {
		require.Greater(t, l, lease/2, "resume %d started with %s of a %s lease left", i, l, lease)
	}
}

// A resumer paused past its lease (a zombie) commits nothing once another took the key over.
func TestZombieResumerIsFenced(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	seedCrashed(t, db.Pool, "zombie", 1)
	eff := newEffects()
	eff.Hold = make(chan struct{})
	eff.Entered = make(chan string, 2)
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
	// One claimer: with more, another of this pass's claimers could still be looking for a due
	// key when the test expires the stalled one's lease, and take it over itself.
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c, Concurrency: 1})
	require.NoError(t, err)

	done := make(chan *worker.RunResult, 1)
	go func() {
		res, err := r.RunOnce(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-eff.Entered
	// The first resumer stalls inside its call; its lease runs out and a second one takes over.
	_, err = db.Pool.Exec(t.Context(), `UPDATE pgsaga_key SET locked_until = now() - interval '1 second'`)
	require.NoError(t, err)
	var stalled chan struct{}
	eff.Change(func(eff *resumetest.Effects) {
		stalled = eff.Hold
		eff.Hold = nil
	})
	second, err := worker.NewResumer(&worker.ResumerConfig{Client: c})
	require.NoError(t, err)
	res, err := second.RunOnce(t.Context())
	require.NoError(t, err)
	require.Equal(t, &worker.RunResult{Claimed: 1, Completed: 1}, res)

	close(stalled)
	zombie := <-done
	require.Equal(t, &worker.RunResult{Claimed: 1, Superseded: 1}, zombie, "the zombie's last phase is fenced")
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`))
	require.Equal(t, 2, eff.Count("zombie-00000"), "both calls ran: fencing protects the commit, not the call")
}

// A resume job's batch holds keys in every state a batch can meet by the time its job runs: due,
// taken by a client's retry (leased), finished by it, not due yet (a retry failed and
// scheduled the next attempt), unknown (deleted by GC), of an operation this client does not
// run, and past its attempt budget. ResumeKeys claims the due ones in one statement and answers
// each ref in order: only the due key runs its effect; the spent one parks without running any.
func TestResumeKeysBatchOfMixedKeys(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	ctx := t.Context()
	for _, prefix := range []string{"due", "leased", "finished", "later", "other", "spent"} {
		seedCrashed(t, db.Pool, prefix, 1)
	}
	for _, sql := range []string{
		`UPDATE pgsaga_key SET locked_until = now() + interval '1 minute' WHERE key = 'leased-00000'`,
		`UPDATE pgsaga_key SET status = 'completed', recovery_point = 'finished', locked_until = NULL,
			response_status = 201, response_body = '{}', completed_at = now(), expires_at = now() + interval '1 day'
		 WHERE key = 'finished-00000'`,
		`UPDATE pgsaga_key SET next_attempt_at = now() + interval '1 hour' WHERE key = 'later-00000'`,
		`UPDATE pgsaga_key SET operation = 'not_registered' WHERE key = 'other-00000'`,
		`UPDATE pgsaga_key SET attempts = 2 WHERE key = 'spent-00000'`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		require.NoError(t, err)
	}

	eff := newEffects()
	c := newClient(t, db.Pool, &saga.Config{MaxAttempts: 2, Operations: []*phases.Operation{eff.Operation(nil)}})
	r, err := worker.NewResumer(&worker.ResumerConfig{Client: c})
	require.NoError(t, err)

	keys := []string{"due-00000", "leased-00000", "finished-00000", "later-00000", "gone-00000", "other-00000", "spent-00000"}
	refs := make([]sibling.KeyRef, len(keys))
	for i, k := range keys {
		refs[i] = sibling.KeyRef{Tenant: scope.Tenant, Actor: scope.Actor, Key: k}
	}
	out, err := r.ResumeKeys(ctx, refs)
	require.NoError(t, err)
	require.Equal(t, []worker.Outcome{
		worker.OutcomeCompleted, worker.OutcomeSkipped, worker.OutcomeSkipped, worker.OutcomeSkipped,
		worker.OutcomeSkipped, worker.OutcomeSkipped, worker.OutcomeParked,
	}, out)

	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`), "only the due key ran its effect")
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM effect_rows WHERE key = 'due-00000'`))
	spent := keyRow(t, c, "spent-00000")
	require.Equal(t, saga.KeyStatusParked, spent.Status)
	require.Equal(t, saga.ParkedAttemptsExhausted, spent.ParkedReason)
	for _, k := range []string{"leased-00000", "later-00000", "other-00000"} {
		require.Equal(t, 1, keyRow(t, c, k).Attempts, "%s: a key not taken spends no attempt", k)
	}
	require.Equal(t, saga.KeyStatusCompleted, keyRow(t, c, "finished-00000").Status)

	none, err := r.ResumeKeys(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none, "an empty batch claims nothing")
}
