package worker

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgsaga/pgsaga/internal/sibling"
)

// Queues the worker works. A process that only inserts (NewInsertOnlyClient) needs none.
const (
	// queueResume holds the resume jobs, a batch of due keys each.
	queueResume = "pgsaga_resume"
	// queueOutbox holds one delivery job per outbox event.
	queueOutbox = "pgsaga_outbox"
	// queueMaintenance holds the periodic jobs River's leader enqueues: retention GC and
	// reconciliation.
	queueMaintenance = "pgsaga_maintenance"
)

// resumeBatchArgs is the River job that resumes a batch of keys the sweep reserved together:
// it takes the leases of those still due in one statement and resumes them all at once. A
// reserved key is in no other batch while its reservation holds (a lease); a key whose job did
// not run by then falls due again and is swept into another batch, and of two jobs that hold it
// the first to take its lease resumes it, the other skips it.
type resumeBatchArgs struct {
	Keys []resumeArgs `json:"keys"`
}

// Kind is the River job kind.
func (resumeBatchArgs) Kind() string { return "pgsaga_resume_batch" }

// InsertOpts puts batches on the resume queue. A job retries only when the database was
// unreachable; the saga's own retries are scheduled in SQL.
func (resumeBatchArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queueResume, MaxAttempts: 3}
}

// resumeArgs is the River job that resumes one key, as workers before batches enqueued them (a
// worker still works such jobs left in the queue). It is unique per key while queued or running.
type resumeArgs struct {
	Tenant string `json:"tenant"`
	Actor  string `json:"actor"`
	Key    string `json:"key"`
}

// Kind is the River job kind.
func (resumeArgs) Kind() string { return "pgsaga_resume" }

// ref is the key a's job resumes.
func (a resumeArgs) ref() sibling.KeyRef {
	return sibling.KeyRef{Tenant: a.Tenant, Actor: a.Actor, Key: a.Key}
}

// resumeArgsOf names ref in a job's arguments.
func resumeArgsOf(ref sibling.KeyRef) resumeArgs {
	return resumeArgs{Tenant: ref.Tenant, Actor: ref.Actor, Key: ref.Key}
}

// InsertOpts makes resume jobs unique per key among unfinished jobs (a finished job does not
// block the next one: a key that failed again is enqueued again when it is next due). A job
// retries only when the database was unreachable; the saga's own retries are scheduled in SQL.
func (resumeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{
		Queue:       queueResume,
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

// singletonJob keeps at most one job of a kind queued or running, on the maintenance queue, with
// one attempt: a slow GC pass or reconciliation is not followed by a pile of others, and the
// next period inserts the next one.
func singletonJob() river.InsertOpts {
	return river.InsertOpts{
		Queue:       queueMaintenance,
		MaxAttempts: 1,
		UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
			rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
			rivertype.JobStateScheduled,
		}},
	}
}

type resumeBatchWorker struct {
	river.WorkerDefaults[resumeBatchArgs]
	w *Worker
}

// Middleware traces the job when tracing is on.
func (r *resumeBatchWorker) Middleware(*rivertype.JobRow) []rivertype.WorkerMiddleware {
	return r.w.traced
}

// Work takes the leases of the batch's keys that are still due and resumes them all at once.
// Every saga outcome (completed, failed and rescheduled, parked, superseded, skipped) completes
// the job; only a failure to reach the database returns an error for River to retry.
func (r *resumeBatchWorker) Work(ctx context.Context, job *river.Job[resumeBatchArgs]) error {
	refs := make([]sibling.KeyRef, len(job.Args.Keys))
	for i, k := range job.Args.Keys {
		refs[i] = k.ref()
	}
	outs, err := r.w.resumer.resumeKeys(ctx, refs)
	if err != nil {
		r.w.metrics.resume("", err)
		return err
	}
	for _, out := range outs {
		r.w.metrics.resume(out, nil)
	}
	return nil
}

type resumeWorker struct {
	river.WorkerDefaults[resumeArgs]
	w *Worker
}

// Middleware traces the job when tracing is on.
func (r *resumeWorker) Middleware(*rivertype.JobRow) []rivertype.WorkerMiddleware { return r.w.traced }

// Work takes the key's lease if it is still free and resumes it. Every saga outcome (completed,
// failed and rescheduled, parked, superseded, skipped) completes the job; only a failure to
// reach the database returns an error for River to retry.
func (r *resumeWorker) Work(ctx context.Context, job *river.Job[resumeArgs]) error {
	ref := job.Args.ref()
	out, err := r.w.resumer.resumeKey(ctx, ref)
	r.w.metrics.resume(out, err)
	return err
}
