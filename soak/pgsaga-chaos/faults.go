package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// faultKind is one kind of fault the scheduler injects.
type faultKind int

const (
	faultKillServe    faultKind = iota // kill -9 a serve, start it again
	faultKillWorker                    // kill -9 a worker, start it again
	faultFreezeServe                   // SIGSTOP a serve for most of a lease (a zombie), then SIGCONT
	faultFreezeWorker                  // the same for a worker
	faultPausePG                       // SIGSTOP every PostgreSQL process for most of a lease
	faultInquiryOff                    // the gateway's inquiry is down for a while
	numFaultKinds
)

// faultCounts are the faults injected, by kind.
type faultCounts struct {
	KillServe, KillWorker     atomic.Int64
	FreezeServe, FreezeWorker atomic.Int64
	PausePG, RestartPG        atomic.Int64
	InquiryOff                atomic.Int64
	// Skipped counts turns whose every target was busy with an earlier fault.
	Skipped atomic.Int64
	// Errors counts faults the harness failed to inject or undo (each is in the timeline).
	Errors atomic.Int64
}

// faults injects faults into a run's processes until its context ends.
type faults struct {
	e         *env
	cfg       *Config
	counts    *faultCounts
	failovers *failoverLog

	mu  sync.Mutex // guards rng
	rng *rand.Rand
	wg  sync.WaitGroup
	// inquiry is held while the gateway's inquiry is off.
	inquiry sync.Mutex
}

func newFaults(e *env, counts *faultCounts, failovers *failoverLog) *faults {
	return &faults{e: e, cfg: e.cfg, counts: counts, failovers: failovers, rng: rand.New(rand.NewPCG(e.cfg.Seed, 2))}
}

// run injects faults until ctx ends, then waits until every fault under way is undone (frozen
// processes continued, killed ones started again, PostgreSQL up). Faults overlap: each runs on
// its own, and the kinds take turns in a shuffled order so every kind comes up in every round.
// PostgreSQL restarts come on their own schedule, evenly spaced over the run; on a Patroni pair
// failovers take their place, one at a time (failovers.go).
func (f *faults) run(ctx context.Context, begin time.Time) {
	restarts := max(f.cfg.DBRestarts, 0)
	if f.e.pair != nil {
		restarts = 0 // failovers take their place
		f.wg.Go(func() { f.failovers.run(ctx, f.e) })
	}
	for i := range restarts {
		at := begin.Add(f.cfg.Duration * time.Duration(i+1) / time.Duration(restarts+1))
		f.wg.Go(func() {
			if !sleepUntil(ctx, at) {
				return
			}
			f.inject("postgres restart", &f.counts.RestartPG, func() error { return f.e.restartPostgres(ctx, f.cfg.DBDown) })
		})
	}
	var round []faultKind
	for {
		if !sleepCtx(ctx, f.between()) {
			break
		}
		if len(round) == 0 {
			round = f.shuffled()
		}
		kind := round[0]
		round = round[1:]
		f.wg.Go(func() { f.one(ctx, kind) })
	}
	f.wg.Wait()
}

// one injects one fault of kind.
func (f *faults) one(ctx context.Context, kind faultKind) {
	switch kind {
	case faultKillServe, faultKillWorker, faultFreezeServe, faultFreezeWorker:
		f.oneDaemon(ctx, kind)
	case faultPausePG:
		if f.e.pair != nil {
			// Not while a failover is under way: there may be no primary to pause.
			if !f.e.db.TryLock() {
				f.counts.Skipped.Add(1)
				return
			}
			defer f.e.db.Unlock()
			f.inject("pause the primary node for "+f.cfg.PauseFor.String(), &f.counts.PausePG, func() error {
				return f.e.pausePrimary(context.WithoutCancel(ctx), f.cfg.PauseFor)
			})
			return
		}
		f.inject("pause postgres for "+f.cfg.PauseFor.String(), &f.counts.PausePG, func() error {
			return f.e.pausePostgres(f.cfg.PauseFor)
		})
	case faultInquiryOff:
		if f.cfg.InquiryOff <= 0 || !f.inquiry.TryLock() {
			return
		}
		defer f.inquiry.Unlock()
		f.inject("gateway inquiry off for "+f.cfg.InquiryOff.String(), &f.counts.InquiryOff, func() error {
			if err := f.e.setSimFaults(ctx, `{"inquiry": false}`); err != nil {
				return err
			}
			time.Sleep(f.cfg.InquiryOff)
			return f.e.setSimFaults(context.WithoutCancel(ctx), `{"inquiry": true}`)
		})
	}
}

// oneDaemon kills (then starts again) or freezes (then continues), as kind says, one serve or
// one worker that no other fault holds.
func (f *faults) oneDaemon(ctx context.Context, kind faultKind) {
	targets, count := f.e.serves, &f.counts.KillServe
	switch kind {
	case faultKillWorker:
		targets, count = f.e.workers, &f.counts.KillWorker
	case faultFreezeServe:
		count = &f.counts.FreezeServe
	case faultFreezeWorker:
		targets, count = f.e.workers, &f.counts.FreezeWorker
	}
	d := f.lock(targets)
	if d == nil {
		return
	}
	defer d.op.Unlock()
	if kind == faultKillServe || kind == faultKillWorker {
		f.inject("kill -9 "+d.name, count, func() error {
			d.killLocked()
			// Sometimes it comes back at once, sometimes after the others noticed.
			time.Sleep(f.duration(f.cfg.Lease / 2))
			return d.start(context.WithoutCancel(ctx))
		})
		return
	}
	f.inject("freeze "+d.name+" for "+f.cfg.PauseFor.String(), count, func() error {
		if err := d.signal(syscall.SIGSTOP); err != nil {
			return err
		}
		time.Sleep(f.cfg.PauseFor)
		return d.signal(syscall.SIGCONT)
	})
}

// inject runs one fault, counts it and records it in the timeline.
func (f *faults) inject(what string, count *atomic.Int64, fn func() error) {
	begin := time.Now()
	f.e.tl.add("fault: %s", what)
	count.Add(1)
	if err := fn(); err != nil {
		f.counts.Errors.Add(1)
		f.e.tl.add("fault: %s: ERROR: %v", what, err)
		return
	}
	f.e.tl.add("fault: %s: undone after %s", what, time.Since(begin).Round(time.Millisecond))
}

// lock takes the op lock of one of targets that no other fault holds, chosen at random; nil
// when all are busy.
func (f *faults) lock(targets []*daemon) *daemon {
	f.mu.Lock()
	first := f.rng.IntN(len(targets))
	f.mu.Unlock()
	for i := range targets {
		d := targets[(first+i)%len(targets)]
		if d.op.TryLock() {
			return d
		}
	}
	f.counts.Skipped.Add(1)
	return nil
}

// between draws the wait before the next fault: uniform in [FaultEvery/2, 3·FaultEvery/2].
func (f *faults) between() time.Duration {
	return f.cfg.FaultEvery/2 + f.duration(f.cfg.FaultEvery)
}

// duration draws a uniform wait in [0, d].
func (f *faults) duration(d time.Duration) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return time.Duration(f.rng.Int64N(int64(d) + 1))
}

// shuffled is every fault kind once, in a random order.
func (f *faults) shuffled() []faultKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	kinds := make([]faultKind, numFaultKinds)
	for i := range kinds {
		kinds[i] = faultKind(i)
	}
	f.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	return kinds
}

// sleepCtx waits for d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// sleepUntil waits until at; false when ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool { return sleepCtx(ctx, time.Until(at)) }
