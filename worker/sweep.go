package worker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/riverqueue/river"

	"github.com/pgsaga/pgsaga/internal/sibling"
)

// sweepTimeout bounds one sweep (one short transaction): a database that stops answering must
// not hold the loop, or Stop, for longer.
const sweepTimeout = 10 * time.Second

// sweepLoop is a worker's own sweep, running every SweepInterval while River runs. stop asks
// it to end after the sweep under way; done is closed when it has ended.
type sweepLoop struct {
	stop chan struct{}
	done chan struct{}
}

// startSweeping starts the worker's sweep loop on ctx, the worker's lifetime context, unless
// one runs. Every worker process sweeps, not only River's leader: a leader killed outright
// leads on until its row in river_leader expires, and no key may wait for that (see the package
// doc). Sweeps in several processes take turns (sweepLockSQL), and none lists a key another
// has reserved.
func (w *Worker) startSweeping(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sweeping != nil {
		return
	}
	l := &sweepLoop{stop: make(chan struct{}), done: make(chan struct{})}
	w.sweeping = l
	go w.sweepEvery(ctx, l)
}

// stopSweeping ends the sweep loop, waiting for the sweep under way (at most sweepTimeout)
// unless ctx ends first.
func (w *Worker) stopSweeping(ctx context.Context) error {
	w.mu.Lock()
	l := w.sweeping
	w.sweeping = nil
	w.mu.Unlock()
	if l == nil {
		return nil
	}
	close(l.stop)
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("a sweep is still under way: %w", ctx.Err())
	}
}

// sweepEvery sweeps at once, then SweepInterval after each sweep ends, until l is stopped or
// ctx ends. It logs when sweeps start failing (at warn) and when they succeed again, not every
// failure: during an outage a fast sweep would log several lines a second.
func (w *Worker) sweepEvery(ctx context.Context, l *sweepLoop) {
	defer close(l.done)
	timer := time.NewTimer(0)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		sweepCtx, cancel := context.WithTimeout(ctx, sweepTimeout)
		n, err := w.sweep(sweepCtx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			w.metrics.sweep(err)
			if !failing {
				w.cfg.Logger.WarnContext(ctx, "worker sweep failed; retrying every sweep interval", "error", err)
			}
			failing = true
		default:
			w.metrics.sweep(nil)
			if failing {
				w.cfg.Logger.InfoContext(ctx, "worker sweep succeeded again")
			}
			failing = false
			if n > 0 {
				w.cfg.Logger.DebugContext(ctx, "sweep enqueued resume jobs", "keys", n)
			}
		}
		timer.Reset(w.cfg.SweepInterval)
	}
}

// sweepLockSQL takes the sweep's lock until the transaction ends, or reports that another
// process's sweep holds it: sweeps run one at a time, whichever process runs them. Two at once
// make resume jobs pass over keys. The later sweep's reservation, whose snapshot predates the
// earlier sweep's commit, locks the rows that sweep has just reserved before it sees that they
// no longer qualify, and keeps them locked until it commits; the earlier sweep's jobs, claiming
// those keys meanwhile, skip them (their claim skips locked rows), and the keys wait for their
// reservation to end, a lease (four workers and 10,000 keys: about a tenth of the keys waited
// so in most runs; TestConcurrentSweepsLeaveNoKeyBehind). A sweep that finds the lock taken
// does nothing: the one under way is doing its work.
//
// The lock is a transaction's advisory lock, so a process killed mid-sweep loses it when its
// connection drops; and the transaction ends itself when its client stops talking to it for
// $1 ms (idle_in_transaction_session_timeout), so that a host that vanished from the network
// mid-sweep holds the lock no longer either.
const sweepLockSQL = `SELECT set_config('idle_in_transaction_session_timeout', $1, true) IS NOT NULL
	AND pg_try_advisory_xact_lock($2)`

// sweepLockID names the sweep's advisory lock: "pgsagaSW" in ASCII.
const sweepLockID = int64(0x7067736167615357)

// sweep reserves up to SweepBatchSize due keys and enqueues them, ResumeBatchSize to a job, in
// one transaction, and returns how many; none when another sweep is under way. A reserved key
// is not listed again for the client's lease (the reservation), so sweeps never enqueue a key
// twice while its job waits; if the job is lost the key falls due again after it.
func (w *Worker) sweep(ctx context.Context) (int, error) {
	tx, err := w.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("error beginning sweep: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var locked bool
	if err := tx.QueryRow(ctx, sweepLockSQL, strconv.FormatInt(sweepTimeout.Milliseconds(), 10), sweepLockID).Scan(&locked); err != nil {
		return 0, fmt.Errorf("error taking the sweep's lock: %w", err)
	}
	if !locked {
		return 0, nil
	}
	refs, err := w.cfg.Client.Internal(sibling.Token{}).ReserveDueTx(ctx, tx, w.cfg.SweepBatchSize, w.cfg.Client.Config().Lease)
	if err != nil {
		return 0, err
	}
	if len(refs) == 0 {
		return 0, nil
	}
	var params []river.InsertManyParams
	for batch := range slices.Chunk(refs, w.resumeBatch) {
		args := resumeBatchArgs{Keys: make([]resumeArgs, len(batch))}
		for i, ref := range batch {
			args.Keys[i] = resumeArgsOf(ref)
		}
		params = append(params, river.InsertManyParams{Args: args})
	}
	if _, err := w.river.InsertManyTx(ctx, tx, params); err != nil {
		return 0, fmt.Errorf("error enqueuing resume jobs: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("error committing sweep: %w", err)
	}
	return len(refs), nil
}
