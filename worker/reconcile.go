package worker

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/pgsaga/pgsaga/reconcile"
)

// reconcileArgs is the periodic reconciliation job, run when the worker has a Lister.
type reconcileArgs struct{}

func (reconcileArgs) Kind() string { return "pgsaga_reconcile" }

func (reconcileArgs) InsertOpts() river.InsertOpts { return singletonJob() }

type reconcileWorker struct {
	river.WorkerDefaults[reconcileArgs]
	w   *Worker
	rec *reconcile.Reconciler
}

// Timeout lets a run take up to its interval: listing a busy provider's hour of charges takes
// longer than the other jobs' minute.
func (r *reconcileWorker) Timeout(*river.Job[reconcileArgs]) time.Duration {
	return max(jobTimeout, r.w.cfg.ReconcileInterval)
}

// Work reconciles the provider's charges of the last ReconcileWindow and stores what no key
// accounts for (reconcile.Reconciler.Run).
func (r *reconcileWorker) Work(ctx context.Context, _ *river.Job[reconcileArgs]) error {
	res, stored, err := r.rec.Run(ctx, time.Now().Add(-r.w.cfg.ReconcileWindow))
	r.w.metrics.reconciled(stored, err)
	if err != nil {
		r.w.cfg.Logger.WarnContext(ctx, "reconciliation failed", "error", err)
		return err
	}
	if len(res.Unmatched) > 0 {
		r.w.cfg.Logger.WarnContext(ctx, "charges at the provider that no key accounts for",
			"checked", res.Checked, "unmatched", len(res.Unmatched), "stored", stored)
	}
	return nil
}
