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
	"github.com/pgsaga/pgsaga/internal/testkit/dbtest"
	"github.com/pgsaga/pgsaga/internal/testkit/resumetest"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
	"github.com/pgsaga/pgsaga/worker"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	c := newClient(t, db.Pool, &saga.Config{})
	for _, tc := range []struct {
		name string
		cfg  *worker.Config
		want string
	}{
		{"nil", nil, "Config.Pool"},
		{"no pool", &worker.Config{Client: c}, "Config.Pool"},
		{"no client", &worker.Config{Pool: db.Pool}, "Config.Client"},
		{"negative sweep", &worker.Config{Pool: db.Pool, Client: c, SweepInterval: -time.Second}, "Config.SweepInterval"},
		{"negative batch", &worker.Config{Pool: db.Pool, Client: c, SweepBatchSize: -1}, "Config.SweepBatchSize"},
		{"negative concurrency", &worker.Config{Pool: db.Pool, Client: c, ResumeConcurrency: -1}, "Config.ResumeConcurrency"},
		{"bad webhook", &worker.Config{Pool: db.Pool, Client: c, WebhookURL: "ftp://x"}, "Config.WebhookURL"},
		{"relative webhook", &worker.Config{Pool: db.Pool, Client: c, WebhookURL: "/hooks"}, "Config.WebhookURL"},
		{"negative retention", &worker.Config{Pool: db.Pool, Client: c, Retention: -time.Hour}, "Config.Retention"},
		{"tiny gc interval", &worker.Config{Pool: db.Pool, Client: c, GCInterval: time.Millisecond}, "Config.GCInterval"},
		{"negative resume batch", &worker.Config{Pool: db.Pool, Client: c, ResumeBatchSize: -1}, "Config.ResumeBatchSize"},
		{"tiny reconcile interval", &worker.Config{Pool: db.Pool, Client: c, ReconcileInterval: time.Millisecond}, "Config.ReconcileInterval"},
		{"reconcile window within its interval", &worker.Config{Pool: db.Pool, Client: c, ReconcileInterval: time.Hour}, "Config.ReconcileWindow"},
		{"short webhook secret", &worker.Config{Pool: db.Pool, Client: c, WebhookSecrets: [][]byte{[]byte("0123456789abcdef"), []byte("short")}}, "Config.WebhookSecrets[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := worker.New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// A payment whose process lost the gateway's answer after charging is finished by the running
// worker (sweep → resume job → inquiry → record): one charge, invoice paid, key completed.
func TestWorkerFinishesCrashedPayment(t *testing.T) {
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

	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = false })
	require.NoError(t, err)
	gw.LoseNext(2)
	_, err = c.Run(ctx, payments.OpCreatePayment, &saga.Request{Scope: scope, Key: "payment-key-1", Method: "POST", Path: "/payments",
		Body: []byte(`{"invoice_id": "` + invoice.ID + `", "amount": 2000}`)})
	var transient *saga.TransientError
	require.ErrorAs(t, err, &transient)
	require.Equal(t, 1, gw.TotalCharges())
	_, err = gw.SetFaults(func(s *sim.Settings) { s.Inquiry = true })
	require.NoError(t, err)
	// The process "died": its retry is due now.
	_, err = db.Pool.Exec(ctx, `UPDATE pgsaga_key SET locked_until = now() - interval '1 second', next_attempt_at = now() WHERE key = 'payment-key-1'`)
	require.NoError(t, err)

	startWorker(t, &worker.Config{Pool: db.Pool, Client: c})
	waitFor(t, "the worker to complete the payment", 20*time.Second, func() bool {
		k, err := c.KeyGet(ctx, scope, "payment-key-1")
		require.NoError(t, err)
		return k.Status == saga.KeyStatusCompleted
	})
	k, err := c.KeyGet(ctx, scope, "payment-key-1")
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, k.Response.Status, string(k.Response.Body))
	require.Equal(t, 1, gw.TotalCharges(), "one charge")
	require.Equal(t, 2000, countRows(t, db.Pool, `SELECT paid FROM invoices WHERE id = $1`, invoice.ID))
}

// Three workers, each with its own pool, client and River client (as three processes would
// be), over 1,000 crashed keys: each key's external call runs once and its last phase commits
// once.
func TestThreeWorkersResumeEachKeyOnce(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	keys := seedCrashed(t, db.Pool, "crashed", 1000)
	eff := newEffects()

	var mu sync.Mutex
	perWorker := make([]int64, 3)
	for i := range perWorker {
		pool, err := pgxpool.New(t.Context(), db.URL)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		c := newClient(t, pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(func() { mu.Lock(); perWorker[i]++; mu.Unlock() })}})
		startWorker(t, &worker.Config{Pool: pool, Client: c, ResumeConcurrency: 4})
	}
	start := time.Now()
	waitFor(t, "every key to complete", 40*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`) == len(keys)
	})
	mu.Lock()
	t.Logf("1000 keys resumed in %s; calls per worker: %v", time.Since(start).Round(time.Millisecond), perWorker)
	mu.Unlock()

	for _, k := range keys {
		require.Equal(t, 1, eff.Count(k), "external calls for %s", k)
	}
	require.Equal(t, len(keys), eff.Total())
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`))
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(DISTINCT key) FROM effect_rows`))
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE attempts = 2`), "each key claimed once")
}

// Stopping a worker while it resumes: Stop waits for the running resumes, the keys it had not
// started stay started and unleased, and a second worker finishes them; no key's call runs
// twice.
func TestWorkerStopsCleanlyMidBatch(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	keys := seedCrashed(t, db.Pool, "batch", 20)
	eff := newEffects()
	eff.Hold = make(chan struct{})
	eff.Entered = make(chan string, len(keys))
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
	w, err := worker.New(&worker.Config{Pool: db.Pool, Client: c, SweepInterval: 50 * time.Millisecond, ResumeConcurrency: 2})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))

	running := []string{<-eff.Entered, <-eff.Entered}
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(context.Background()) }()
	// Stop must wait for the two held resumes.
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while resumes were running", err)
	case <-time.After(300 * time.Millisecond):
	}
	eff.Change(func(eff *resumetest.Effects) {
		close(eff.Hold)
		eff.Hold = nil
	})
	require.NoError(t, <-stopped)

	for _, k := range running {
		row, err := c.KeyGet(t.Context(), scope, k)
		require.NoError(t, err)
		require.Equal(t, saga.KeyStatusCompleted, row.Status, "%s ran to its end", k)
	}
	require.Equal(t, 2, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`))
	require.Equal(t, len(keys)-2, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key
		WHERE status = 'started' AND attempts = 1 AND locked_until <= now()`), "the rest are untouched and due")
	require.Equal(t, 2, eff.Total())

	startWorker(t, &worker.Config{Pool: db.Pool, Client: newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})})
	waitFor(t, "a second worker to finish the rest", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`) == len(keys)
	})
	for _, k := range keys {
		require.Equal(t, 1, eff.Count(k), k)
	}
	require.Equal(t, len(keys), countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`))
}

// A Stop whose context ends while a resume is held returns the context's error, and the resume
// is not cut: released later, it still completes its key.
func TestStopTimeoutDoesNotCutAResume(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	seedCrashed(t, db.Pool, "held", 1)
	eff := newEffects()
	eff.Hold = make(chan struct{})
	eff.Entered = make(chan string, 1)
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
	w, err := worker.New(&worker.Config{Pool: db.Pool, Client: c, SweepInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	<-eff.Entered

	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, w.Stop(ctx), context.DeadlineExceeded)
	require.Equal(t, 0, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`))
	close(eff.Hold)
	waitFor(t, "the held resume to complete", 10*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`) == 1
	})
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM pgsaga_key WHERE status = 'completed'`))
}

// A worker killed in the middle of a resume leaves its job "running" in River until River's
// rescuer retries it (after a minute plus the lease). The keys it held are not stranded that
// long: their leases and their reservations run out, the next sweep enqueues them again, and the
// new job resumes them once (the rescued job will find them finished and skip them).
func TestKeysOfADeadWorkersJobAreResumedAgain(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	seedCrashed(t, db.Pool, "dead", 1)
	eff := newEffects()
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}, Lease: 2 * time.Second})
	inserter, err := worker.NewInsertOnlyClient(db.Pool)
	require.NoError(t, err)
	tx, err := db.Pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = inserter.InsertTx(t.Context(), tx, worker.ResumeBatchArgs{Keys: []worker.ResumeArgs{{Tenant: "t1", Actor: "a1", Key: "dead-00000"}}}, nil)
	require.NoError(t, err)
	// The dead worker fetched it ten seconds ago: River would rescue the job only after a minute
	// and a lease, but the key's lease and its reservation for that job have run out.
	_, err = tx.Exec(t.Context(), `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_at = now() - interval '10 seconds', attempted_by = '{dead-worker}' WHERE kind = 'pgsaga_resume_batch'`)
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `UPDATE pgsaga_key SET reserved_until = now() - interval '1 second'`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))

	startWorker(t, &worker.Config{Pool: db.Pool, Client: c})
	waitFor(t, "a new job to resume the key", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`) == 1
	})
	require.Equal(t, 1, eff.Count("dead-00000"))
	require.Equal(t, 2, countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_resume_batch'
		AND args @> '{"keys": [{"key": "dead-00000"}]}'`), "the dead worker's job, and the sweep's")
	require.Equal(t, 1, countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_resume_batch'
		AND attempted_by = '{dead-worker}' AND state = 'running'`), "not rescued: the key did not wait for it")
	require.Equal(t, 2, countRows(t, db.Pool, `SELECT attempts FROM pgsaga_key`))
}

// A resume job of one key, as workers enqueued them before batches, left in the queue by an
// upgrade, is still worked: the key is resumed once.
func TestSingleKeyResumeJobIsWorked(t *testing.T) {
	t.Parallel()
	db := dbtest.NewDB(t)
	createEffectTable(t, db.Pool)
	seedCrashed(t, db.Pool, "old", 1)
	eff := newEffects()
	c := newClient(t, db.Pool, &saga.Config{Operations: []*phases.Operation{eff.Operation(nil)}})
	inserter, err := worker.NewInsertOnlyClient(db.Pool)
	require.NoError(t, err)
	tx, err := db.Pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = inserter.InsertTx(t.Context(), tx, worker.ResumeArgs{Tenant: "t1", Actor: "a1", Key: "old-00000"}, nil)
	require.NoError(t, err)
	// Reserved for that job, as the old sweep left it: no sweep enqueues it again meanwhile.
	_, err = tx.Exec(t.Context(), `UPDATE pgsaga_key SET reserved_until = now() + interval '1 hour'`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))

	startWorker(t, &worker.Config{Pool: db.Pool, Client: c})
	waitFor(t, "the job to resume the key", 20*time.Second, func() bool {
		return countRows(t, db.Pool, `SELECT count(*) FROM effect_rows`) == 1
	})
	require.Equal(t, 1, eff.Count("old-00000"))
	require.Equal(t, 0, countRows(t, db.Pool, `SELECT count(*) FROM river_job WHERE kind = 'pgsaga_resume_batch'`))
	require.Equal(t, 2, countRows(t, db.Pool, `SELECT attempts FROM pgsaga_key`))
}
