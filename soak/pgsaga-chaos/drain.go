package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
)

// drainResult is what the drain did after the run.
type drainResult struct {
	took time.Duration
	// startedAtEnd counts the keys started when the run ended; leftByWorkers those still
	// started after the workers had the keys to themselves for Config.WorkerDrain.
	startedAtEnd, leftByWorkers int
	workersTook                 time.Duration
	// retried counts the intents the clients retried after the run (no definitive answer yet).
	retried int
	// parked counts the keys found parked, by reason; settled and resumed what was done.
	parked                          map[string]int
	settledSucceeded, settledFailed int
	resumed                         int
	// settledFailedKeys are the keys settled failed: their 402 payment_failed is expected.
	settledFailedKeys map[scope]bool
	// decisions are the operator's actions, one line each, for the summary.
	decisions []string
	// errs are what the drain could not do.
	errs []string
}

// drain finishes every intent after the run, as the workers and an operator would: the workers
// alone for a while, then the clients retry what they got no answer for, then every parked key
// is resumed (attempts exhausted) or settled from the ledger (outcome unknown), and the clients
// retry those to read their answers.
func (r *runner) drain(ctx context.Context) *drainResult {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DrainTimeout)
	defer cancel()
	res := &drainResult{parked: map[string]int{}, settledFailedKeys: map[scope]bool{}}
	defer func() { res.took = time.Since(begin) }()
	fail := func(format string, args ...any) {
		res.errs = append(res.errs, fmt.Sprintf(format, args...))
		r.tl.add("drain: "+format, args...)
	}

	started, err := r.env.listKeys(ctx, "started")
	if err != nil {
		fail("%v", err)
		return res
	}
	res.startedAtEnd = len(started)
	r.tl.add("drain: %d keys started at the end of the run; the workers alone for up to %s", len(started), r.cfg.WorkerDrain)
	res.leftByWorkers, err = r.waitNoStarted(ctx, time.Now().Add(r.cfg.WorkerDrain))
	res.workersTook = time.Since(begin)
	if err != nil {
		fail("%v", err)
	}
	r.tl.add("drain: %d keys still started after %s of workers alone", res.leftByWorkers, res.workersTook.Round(time.Millisecond))

	var unanswered []*intent
	for _, it := range r.traffic.intents.all() {
		if sent, answers, parked := it.snapshot(); !sent.IsZero() && len(answers) == 0 && !parked {
			unanswered = append(unanswered, it)
		}
	}
	res.retried = len(unanswered)
	r.tl.add("drain: the clients retry %d intents they got no answer for (parked keys wait for the operator)", len(unanswered))
	r.retry(ctx, unanswered)

	// Parked keys: resume those whose budget ran out; settle those whose outcome is unknown
	// (and any that parks again after a resume) from what the ledger says.
	handled := map[scope]bool{}
	for round := 0; ; round++ {
		if left, err := r.waitNoStarted(ctx, time.Time{}); err != nil || left > 0 {
			fail("%d keys still started: %v", left, err)
			break
		}
		parked, err := r.env.listKeys(ctx, "failed")
		if err != nil {
			fail("%v", err)
			break
		}
		if len(parked) == 0 {
			break
		}
		if round == 3 {
			fail("%d keys still parked after three rounds of resume and settle", len(parked))
			break
		}
		// A charge sent by an execution that gave up lands at most the in-flight window later,
		// and a pending one turns final after --pending-for: wait for both before reading.
		quiet := orNone(r.cfg.Sim.LatencyBefore) + orNone(r.cfg.Sim.LatencyJitter) + orNone(r.cfg.Sim.PendingFor) + time.Second
		if !sleepCtx(ctx, quiet) {
			break
		}
		for _, k := range parked {
			if err := r.operate(ctx, k, !handled[k.scope()], res); err != nil {
				fail("%s: %v", k.scope(), err)
			}
			handled[k.scope()] = true
		}
	}

	var wasParked []*intent
	for _, it := range r.traffic.intents.all() {
		if sent, answers, _ := it.snapshot(); !sent.IsZero() && len(answers) == 0 {
			wasParked = append(wasParked, it)
		}
	}
	r.tl.add("drain: the clients retry the %d intents still unanswered (parked, then resumed or settled) to read their answers", len(wasParked))
	r.retry(ctx, wasParked)
	return res
}

// operate is the operator's action on one parked key: resume it the first time when its attempts
// ran out (the faults are over, so it may now finish), settle it from the ledger otherwise.
func (r *runner) operate(ctx context.Context, k cliKey, first bool, res *drainResult) error {
	show, _, err := r.env.showKey(ctx, k.scope())
	if err != nil {
		return err
	}
	parked := orEmpty(show.ParkedReason)
	if first {
		res.parked[parked]++
	}
	ref := show.reference()
	if (first && parked != "outcome_unknown") || ref == "" {
		res.resumed++
		out, err := r.env.cli(ctx, "resume", "--json", "--tenant", k.Tenant, "--actor", k.Actor, "--gateway-url", r.env.simURL, k.Key.Key)
		res.decisions = append(res.decisions, fmt.Sprintf("%s (%s, parked %s): resumed: %s", k.scope(), k.Operation, parked, answerStatus(out, err)))
		r.tl.add("drain: resumed %s (parked %s): %s", k.scope(), parked, trimOutput(out, err))
		return nil // the key's next state is read in the next round
	}

	charge, err := r.finalCharge(ctx, ref)
	if err != nil {
		return err
	}
	args := []string{"settle", "--json", "--tenant", k.Tenant, "--actor", k.Actor, "--gateway-url", r.env.simURL}
	var decision string
	if charge != nil && charge.Status == gateway.StatusSucceeded {
		decision = "succeeded " + charge.ID
		args = append(args, "--outcome", "succeeded", "--reference", charge.ID,
			"--note", fmt.Sprintf("chaos harness: the ledger holds charge %s for %s", charge.ID, ref))
		res.settledSucceeded++
	} else {
		decision = "failed"
		args = append(args, "--outcome", "failed", "--note", fmt.Sprintf("chaos harness: the ledger holds no succeeded charge for %s", ref))
		res.settledFailed++
		res.settledFailedKeys[k.scope()] = true
	}
	out, err := r.env.cli(ctx, append(args, k.Key.Key)...)
	res.decisions = append(res.decisions, fmt.Sprintf("%s (parked %s, %s): settled %s: %s", k.scope(), parked, ref, decision, answerStatus(out, err)))
	r.tl.add("drain: settled %s (parked %s, %s) as %s: %s", k.scope(), parked, ref, decision, trimOutput(out, err))
	return err
}

// finalCharge returns the charge the ledger holds for ref once it is final (nil when there is
// none), the first one when there are several (a double charge, which the checks report).
func (r *runner) finalCharge(ctx context.Context, ref string) (*gateway.Charge, error) {
	for {
		l, err := r.ledger.read(ctx)
		if err != nil {
			return nil, err
		}
		charges := byReference(l)[ref]
		if len(charges) == 0 {
			return nil, nil
		}
		if charges[0].Status != gateway.StatusPending {
			return &charges[0], nil
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return nil, fmt.Errorf("charge %s of %s still pending: %w", charges[0].ID, ref, ctx.Err())
		}
	}
}

// waitNoStarted waits until no key is started, or until deadline (zero: ctx's), and returns how
// many are left.
func (r *runner) waitNoStarted(ctx context.Context, deadline time.Time) (int, error) {
	for {
		started, err := r.env.listKeys(ctx, "started")
		if err != nil {
			return -1, err
		}
		if len(started) == 0 || (!deadline.IsZero() && time.Now().After(deadline)) {
			return len(started), nil
		}
		if !sleepCtx(ctx, time.Second) {
			return len(started), nil
		}
	}
}

// retry submits intents again, at most 32 at once, until each gets a definitive answer, finds
// its key parked, or ctx ends.
func (r *runner) retry(ctx context.Context, its []*intent) {
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for _, it := range its {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r.traffic.submit(ctx, it, true)
		})
	}
	wg.Wait()
}

// answerStatus is the status of the response a resume or settle printed with --json, or its
// error.
func answerStatus(out []byte, err error) string {
	var doc struct {
		Status int `json:"status"`
	}
	if err != nil || json.Unmarshal(out, &doc) != nil {
		return trimOutput(out, err)
	}
	return fmt.Sprintf("answers %d", doc.Status)
}

// trimOutput is a command's output or error on one line, for the timeline.
func trimOutput(out []byte, err error) string {
	if err != nil {
		return "ERROR " + err.Error()
	}
	s := strings.TrimSpace(string(out))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
