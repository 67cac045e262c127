package worker

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/pgsaga/pgsaga/saga"
)

// gcArgs is the periodic retention job.
type gcArgs struct{}

func (gcArgs) Kind() string { return "pgsaga_gc" }

func (gcArgs) InsertOpts() river.InsertOpts { return singletonJob() }

type gcWorker struct {
	river.WorkerDefaults[gcArgs]
	w *Worker
}

// Work deletes completed keys past their retention (leaving their tombstones) and the tombstones
// past theirs, then inbox entries past InboxRetention.
func (g *gcWorker) Work(ctx context.Context, _ *river.Job[gcArgs]) error {
	p := &saga.KeyDeleteExpiredParams{BatchSize: g.w.cfg.GCBatchSize, TombstoneRetention: g.w.cfg.TombstoneRetention}
	if g.w.cfg.Retention > 0 {
		p.OlderThan = &g.w.cfg.Retention
	}
	n, err := g.w.cfg.Client.KeyDeleteExpired(ctx, p)
	g.w.metrics.deleted(n)
	if n > 0 {
		g.w.cfg.Logger.InfoContext(ctx, "retention GC deleted expired keys", "keys", n)
	}
	if err != nil {
		return err
	}
	m, err := deleteOldInbox(ctx, g.w.cfg.Pool, g.w.cfg.InboxRetention, g.w.cfg.GCBatchSize)
	if m > 0 {
		g.w.cfg.Logger.InfoContext(ctx, "retention GC deleted old inbox entries", "events", m)
	}
	return err
}
