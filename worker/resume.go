package worker

import (
	"context"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgsaga/pgsaga/saga"
)

// Queues the worker works. A process that only inserts (NewInsertOnlyClient) needs none.
const (
	// QueueResume holds one resume job per due key.
	QueueResume = "pgsaga_resume"
	// QueueOutbox holds one delivery job per outbox event.
	QueueOutbox = "pgsaga_outbox"
	// QueueMaintenance holds the periodic sweep and retention GC jobs.
	QueueMaintenance = "pgsaga_maintenance"
)

// ResumeArgs is the River job that resumes one key. It is unique per key while queued or
// running, so however many sweeps see a key, one job at a time resumes it.
type ResumeArgs struct {
	Tenant string `json:"tenant"`
	Actor  string `json:"actor"`
	Key    string `json:"key"`
}

// Kind is the River job kind.
func (ResumeArgs) Kind() string { return "pgsaga_resume" }

// InsertOpts makes resume jobs unique per key among unfinished jobs (a finished job does not
// block the next one: a key that failed again is enqueued again when it is next due). A job
// retries only when the database was unreachable; the saga's own retries are scheduled in SQL.
func (ResumeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueResume,
		MaxAttempts: 3,
		UniqueOpts: river.UniqueOpts{
			ByArgs: true,
			ByState: []rivertype.JobState{
				rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
				rivertype.JobStateRetryable, rivertype.JobStateScheduled,
			},
		},
	}
}

// sweepArgs is the periodic job that turns due keys into resume jobs.
type sweepArgs struct{}

func (sweepArgs) Kind() string { return "pgsaga_sweep" }

func (sweepArgs) InsertOpts() river.InsertOpts { return singletonJob() }

// singletonJob keeps at most one job of a kind queued or running, on the maintenance queue, with
// one attempt: a slow sweep or GC pass is not followed by a pile of others, and the next period
// inserts the next one.
func singletonJob() river.InsertOpts {
	return river.InsertOpts{
		Queue:       QueueMaintenance,
		MaxAttempts: 1,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateScheduled,
		}},
	}
}

type sweepWorker struct {
	river.WorkerDefaults[sweepArgs]
	w *Worker
}

func (s *sweepWorker) Work(ctx context.Context, _ *river.Job[sweepArgs]) error {
	n, err := s.w.sweep(ctx)
	s.w.metrics.sweep(err)
	if err != nil {
		return err
	}
	if n > 0 {
		s.w.cfg.Logger.DebugContext(ctx, "sweep enqueued resume jobs", "keys", n)
	}
	return nil
}

// sweep reserves up to SweepBatchSize due keys and enqueues their resume jobs in one
// transaction, and returns how many. A reserved key is not listed again for the client's lease
// (the reservation), so sweeps never pile duplicate inserts on keys whose jobs wait; if the jobs
// are lost the keys fall due again after it, and River's uniqueness still refuses a second
// unfinished job for a key.
func (w *Worker) sweep(ctx context.Context) (int, error) {
	tx, err := w.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("error beginning sweep: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	refs, err := w.cfg.Client.ReserveDueTx(ctx, tx, w.cfg.SweepBatchSize, w.cfg.Client.Config().Lease)
	if err != nil {
		return 0, err
	}
	if len(refs) == 0 {
		return 0, nil
	}
	params := make([]river.InsertManyParams, len(refs))
	for i, ref := range refs {
		params[i] = river.InsertManyParams{Args: ResumeArgs{Tenant: ref.Scope.Tenant, Actor: ref.Scope.Actor, Key: ref.Key}}
	}
	if _, err := w.river.InsertManyTx(ctx, tx, params); err != nil {
		return 0, fmt.Errorf("error enqueuing resume jobs: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("error committing sweep: %w", err)
	}
	return len(refs), nil
}

type resumeWorker struct {
	river.WorkerDefaults[ResumeArgs]
	w *Worker
}

// Work takes the key's lease if it is still free and resumes it. Every saga outcome (completed,
// failed and rescheduled, parked, superseded, skipped) completes the job; only a failure to
// reach the database returns an error for River to retry.
func (r *resumeWorker) Work(ctx context.Context, job *river.Job[ResumeArgs]) error {
	ref := saga.KeyRef{Scope: saga.Scope{Tenant: job.Args.Tenant, Actor: job.Args.Actor}, Key: job.Args.Key}
	out, err := r.w.resumer.ResumeKey(ctx, ref)
	r.w.metrics.resume(out, err)
	return err
}
