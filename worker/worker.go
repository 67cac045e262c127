package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgsaga/pgsaga/internal/pgavail"
	"github.com/pgsaga/pgsaga/reconcile"
	"github.com/pgsaga/pgsaga/saga"
)

// jobTimeout bounds each job's context.
const jobTimeout = time.Minute

// Worker runs the resumer, outbox delivery and retention GC on River.
type Worker struct {
	cfg     *Config
	resumer *resumer
	river   *river.Client[pgx.Tx]
	metrics *metrics
	// resumeBatch is how many keys one resume job takes.
	resumeBatch int
	// traced is the middleware of the jobs traced when tracing is on (jobMiddleware).
	traced []rivertype.WorkerMiddleware

	mu sync.Mutex
	// retrying is the start retried in the background while the database cannot be reached;
	// nil when none runs.
	retrying *startLoop
	// riverStarted is whether River started since the last Stop.
	riverStarted bool
	// sweeping is the sweep loop, running while River runs; nil when none runs.
	sweeping *sweepLoop
}

// New checks the config and builds the worker and its River client. Nothing runs until Start.
func New(cfg *Config) (*Worker, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	resumer, err := newResumer(&resumerConfig{Client: cfg.Client, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	w := &Worker{cfg: cfg, resumer: resumer, resumeBatch: min(cfg.ResumeBatchSize, cfg.ResumeConcurrency),
		traced: jobMiddleware(cfg.TracerProvider)}
	if cfg.Registerer != nil {
		if w.metrics, err = newMetrics(cfg.Registerer, cfg.Client); err != nil {
			return nil, fmt.Errorf("error registering worker metrics: %w", err)
		}
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &resumeBatchWorker{w: w})
	river.AddWorker(workers, &resumeWorker{w: w})
	river.AddWorker(workers, &outboxWorker{w: w})
	river.AddWorker(workers, &gcWorker{w: w})
	periodic := []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(cfg.GCInterval),
			func() (river.JobArgs, *river.InsertOpts) { return gcArgs{}, nil },
			&river.PeriodicJobOpts{ID: "pgsaga_gc", RunOnStart: true}),
	}
	if cfg.Lister != nil {
		rec, err := reconcile.New(&reconcile.Config{Client: cfg.Client, Lister: cfg.Lister})
		if err != nil {
			return nil, err
		}
		river.AddWorker(workers, &reconcileWorker{w: w, rec: rec})
		periodic = append(periodic, river.NewPeriodicJob(river.PeriodicInterval(cfg.ReconcileInterval),
			func() (river.JobArgs, *river.InsertOpts) { return reconcileArgs{}, nil },
			&river.PeriodicJobOpts{ID: "pgsaga_reconcile", RunOnStart: true}))
	}
	w.river, err = river.NewClient(riverpgxv5.New(cfg.Pool), &river.Config{
		Logger: riverLogger(cfg.Logger),
		// A resume job left "running" by a worker that died keeps its key's unique slot until
		// River's rescuer retries it; rescue after a minute and a lease rather than River's
		// default hour. A job rescued while it still runs is harmless: the retry finds the key's
		// lease live (or the key done) and skips it. Resumes ignore the timeout (saga detaches
		// them); it bounds deliveries and GC passes.
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: jobTimeout + cfg.Client.Config().Lease,
		// The sweep completes a job every SweepInterval (86,400 a day at 1s); the keys and the
		// outbox events are the record, so completed jobs need not outlive an hour.
		CompletedJobRetentionPeriod: time.Hour,
		Workers:                     workers,
		PeriodicJobs:                periodic,
		PollOnly:                    cfg.PollOnly,
		Queues: map[string]river.QueueConfig{
			// A job resumes a batch of keys at once: as many jobs as batches fit in
			// ResumeConcurrency. The queue is looked at every 50ms as well as when River hears
			// of an insert: with River's 1s poll, a sweep's jobs waited up to a second before a
			// worker took them (BenchmarkWorkerResume, 10,000 keys, two workers: 2,570-2,780
			// keys/s with 1s, 2,930-2,950 with 50ms). The cost is a light fetch query per 50ms
			// per idle worker.
			queueResume: {MaxWorkers: max(cfg.ResumeConcurrency/w.resumeBatch, 1), FetchCooldown: 5 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond},
			queueOutbox: {MaxWorkers: cfg.OutboxConcurrency},
			// GC and reconciliation run every minute or more: River's 1s poll is soon enough.
			queueMaintenance: {MaxWorkers: 2},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("error creating River client: %w", err)
	}
	return w, nil
}

// Start starts the worker's sweep, working jobs and, on whichever worker River elects leader,
// the periodic GC (and reconciliation); Stop ends it. Cancelling ctx is an abrupt stop (River
// cancels the running jobs' contexts; resumes are detached from cancellation and still run to
// their end), so pass a context that outlives the worker and call Stop.
//
// Start returns nil once River has started, and also when the database cannot be reached at
// that moment (down, restarting, out of connections, a standby refusing writes during a
// failover): the worker then keeps trying in the background, with backoff capped at 5s, logging
// each failure, until it starts, ctx ends or Stop is called. It returns an error only when the
// database answered and refused (River's tables are missing: the database is not migrated;
// the pool's role lacks a privilege), which trying again would not change. Once started, the
// worker rides out the database going away on its own: River's producers, elector, notifier and
// completer retry until it is back.
//
// Unless Config.PollOnly is set, each attempt also checks that a notification sent through
// Config.Pool reaches a session listening on it (within 5s); when it does not, Start returns an
// error matching saga.ErrListenUnheard: River would otherwise LISTEN in vain behind a
// transaction pooler.
func (w *Worker) Start(ctx context.Context) error {
	err := w.tryStart(ctx, ctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil || errors.Is(err, saga.ErrListenUnheard) || !pgavail.Unavailable(err):
		return fmt.Errorf("error starting worker: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.retrying == nil || w.retrying.ended() {
		w.retrying = w.keepStarting(ctx, err)
	}
	return nil
}

// Stop stops the sweep and fetching jobs, waits for the jobs already running (a resume
// runs to its end) and returns nil. Jobs not yet fetched stay queued for another worker, and keys
// not yet resumed stay started (their reservations lapse after the lease), so nothing is lost.
// A start still being retried is abandoned. If ctx ends first, Stop cancels the running jobs'
// contexts — which cuts deliveries and GC, never a resume between a call and its phase — waits
// up to 5s more for them, and returns ctx's error.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	retrying := w.retrying
	w.retrying = nil
	w.mu.Unlock()
	if retrying != nil {
		retrying.cancel()
		select {
		case <-retrying.done:
		case <-ctx.Done():
			return fmt.Errorf("error stopping worker cleanly: a start attempt is still under way: %w", ctx.Err())
		}
	}
	w.mu.Lock()
	started := w.riverStarted
	w.mu.Unlock()
	if !started {
		// River's Stop on a client whose start failed may pick ctx's error over its stopped
		// channel, and its StopAndCancel needs a client that started.
		return nil
	}
	defer func() {
		w.mu.Lock()
		w.riverStarted = false
		w.mu.Unlock()
	}()
	// The sweep stops first: what it enqueues while River stops would wait for another worker.
	sweepErr := w.stopSweeping(ctx)
	err := w.river.Stop(ctx)
	if err != nil {
		hard, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = w.river.StopAndCancel(hard)
	}
	if err = cmp.Or(err, sweepErr); err != nil {
		return fmt.Errorf("error stopping worker cleanly: %w", err)
	}
	return nil
}

// RiverClient is the worker's River client, for River's own calls (listing jobs, cancelling
// one). Outbox events need no worker: emit them through an Outbox (NewOutbox).
func (w *Worker) RiverClient() *river.Client[pgx.Tx] { return w.river }
