package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// runner is one chaos run: its processes, clients, ledger watch and fault counts.
type runner struct {
	cfg     *Config
	dir     string
	tl      *timeline
	env     *env
	traffic *traffic
	ledger  *ledgerWatch
	faults  *faultCounts
	// failovers are a Patroni pair's failovers, as they went.
	failovers *failoverLog
}

// run performs one chaos run: it starts the processes, lets the clients submit intents while
// faults are injected for cfg.Duration, drains, checks and returns the summary. An error means
// the run could not be carried out (or was interrupted); violations are in the summary.
func run(ctx context.Context, cfg *Config) (*summary, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("invalid Config: %w", err)
	}
	dir, temporary := cfg.Dir, cfg.Dir == ""
	if temporary {
		var err error
		if dir, err = os.MkdirTemp("", "pgsaga-chaos-*"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s, err := runIn(ctx, cfg, dir)
	if temporary && err == nil && s.pass() {
		_ = os.RemoveAll(dir)
		s.dir = ""
	}
	return s, err
}

func runIn(ctx context.Context, cfg *Config, dir string) (*summary, error) {
	tl, err := newTimeline(filepath.Join(dir, "timeline.log"), cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer tl.close()
	tl.add("chaos run in %s, seed %d", dir, cfg.Seed)
	e, err := startEnv(ctx, cfg, dir, tl)
	if err != nil {
		return nil, err
	}
	defer e.close()
	keys, err := e.apiKeys(ctx, cfg.Clients)
	if err != nil {
		return nil, err
	}
	tr, err := newTraffic(cfg, e.serveURLs, keys, tl)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, dir: dir, tl: tl, env: e, traffic: tr, ledger: newLedgerWatch(e.simURL, tl), faults: &faultCounts{},
		failovers: newFailoverLog(cfg, tl, tr.tr.createdBetween)}
	return r.run(ctx)
}

func (r *runner) run(ctx context.Context) (*summary, error) {
	begin := time.Now()
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	timer := time.AfterFunc(r.cfg.Duration, func() { stop(errRunOver) })
	defer timer.Stop()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	// Often enough to see every pending charge while it is pending.
	go r.ledger.poll(pollCtx, min(max(r.cfg.Sim.PendingFor/4, 50*time.Millisecond), 500*time.Millisecond))
	go r.progress(runCtx)

	r.tl.add("run: %d clients for %s", r.cfg.Clients, r.cfg.Duration)
	var wg sync.WaitGroup
	wg.Go(func() { r.traffic.run(runCtx) })
	wg.Go(func() { newFaults(r.env, r.faults, r.failovers).run(runCtx, begin) })
	wg.Wait()
	ran := time.Since(begin)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run interrupted: %w", err)
	}
	r.tl.add("run: over after %s; faults stopped and undone", ran.Round(time.Millisecond))
	if err := r.env.ensureUp(ctx); err != nil {
		return nil, fmt.Errorf("error bringing every process up for the drain: %w", err)
	}

	dr := r.drain(ctx)
	stopPoll()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("drain interrupted: %w", err)
	}
	rec, err := r.reconcile(ctx, begin.Add(-time.Minute))
	if err != nil {
		return nil, err
	}
	ev, err := r.collect(ctx, dr, rec)
	if err != nil {
		return nil, fmt.Errorf("error reading the final state: %w", err)
	}
	if err := writeEvidence(filepath.Join(r.dir, "evidence.json"), ev); err != nil {
		r.tl.add("error writing the evidence: %v", err)
	}
	v := judge(ev)
	s := r.summarize(ev, v, dr, begin, ran)
	if !v.pass() {
		if err := r.writeViolations(ctx, ev, v); err != nil {
			r.tl.add("error writing the violations: %v", err)
		}
	}
	return s, nil
}

// progress adds a line to the timeline every 30s while the run goes on.
func (r *runner) progress(ctx context.Context) {
	for sleepCtx(ctx, 30*time.Second) {
		requests, _ := r.traffic.tr.figures()
		answered := 0
		all := r.traffic.intents.all()
		for _, it := range all {
			if _, ok := it.first(); ok {
				answered++
			}
		}
		r.tl.add("progress: %d intents, %d answered, %d requests, %d faults, %d failovers, %d charges seen pending", len(all), answered, requests,
			r.faults.KillServe.Load()+r.faults.KillWorker.Load()+r.faults.FreezeServe.Load()+r.faults.FreezeWorker.Load()+r.faults.PausePG.Load()+r.faults.RestartPG.Load()+r.faults.InquiryOff.Load(),
			len(r.failovers.all()), r.ledger.pendingSeen())
	}
}
