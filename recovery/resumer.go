package recovery

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/saga"
)

// KeyRef names one key.
type KeyRef struct {
	Scope saga.Scope
	Key   string
}

// Outcome is what resuming one key came to.
type Outcome string

const (
	// OutcomeCompleted: the key finished and its response is stored (a success or a stored
	// business outcome such as a decline).
	OutcomeCompleted Outcome = "completed"
	// OutcomeFailed: the attempt did not finish the key; it is still started, with its next
	// attempt scheduled (a transient failure) or its lease taken over by someone else.
	OutcomeFailed Outcome = "failed"
	// OutcomeParked: the key ran out of attempts or failed permanently and is parked as failed
	// for an operator.
	OutcomeParked Outcome = "parked"
	// OutcomeSuperseded: another execution took the key over while this one ran (this one was
	// paused past its lease); this one's writes were fenced and the key is as the other left it.
	OutcomeSuperseded Outcome = "superseded"
	// OutcomeSkipped: the key was not due (gone, finished, parked, leased by someone else, or
	// its next attempt not yet reached), so nothing ran.
	OutcomeSkipped Outcome = "skipped"
)

// RunResult counts what one RunOnce did.
type RunResult struct {
	// Claimed is how many keys the pass took the lease of.
	Claimed int
	// Completed, Failed and Parked count the resumes by outcome (see Outcome).
	Completed int
	Failed    int
	Parked    int
	// Superseded counts resumes whose key another execution took over meanwhile.
	Superseded int
	// Released is how many claimed keys were given back unstarted because the pass was
	// cancelled.
	Released int
}

// Resumer claims due keys and resumes them through a saga client.
type Resumer struct {
	cfg   *Config
	ops   []string
	lease time.Duration
}

// New checks the config and returns a resumer.
func New(cfg *Config) (*Resumer, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Resumer{cfg: cfg, ops: cfg.Client.OperationNames(), lease: cfg.Client.Config().Lease}, nil
}

// RunOnce claims up to BatchSize due keys in one statement and resumes them, Concurrency at a
// time, each through its remaining phases. It returns when every started resume has returned.
// Cancelling ctx starts no further resume and gives the unstarted claims back. An error means
// the claim itself failed; resumes that fail are counted, logged and left to the next pass.
func (r *Resumer) RunOnce(ctx context.Context) (*RunResult, error) {
	keys, err := r.claim(ctx, r.cfg.BatchSize)
	if err != nil {
		return nil, err
	}
	res := &RunResult{Claimed: len(keys)}
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		unstarted []*saga.Key
		next      = make(chan *saga.Key)
	)
	for range min(r.cfg.Concurrency, len(keys)) {
		wg.Go(func() {
			for k := range next {
				out := r.resume(ctx, k)
				mu.Lock()
				res.count(out)
				mu.Unlock()
			}
		})
	}
feed:
	for i, k := range keys {
		select {
		case <-ctx.Done():
			unstarted = keys[i:]
			break feed
		case next <- k:
		}
	}
	close(next)
	wg.Wait()
	if err := r.release(ctx, unstarted); err != nil {
		r.cfg.Logger.WarnContext(ctx, "could not give back unstarted claims; their leases expire on their own", "keys", len(unstarted), "error", err)
	} else {
		res.Released = len(unstarted)
	}
	return res, nil
}

// ResumeKey takes the lease of one started key whose lease expired and resumes it; it is what a
// resume job runs for a key ReserveDueTx returned. Unlike RunOnce it does not wait for the key's
// next_attempt_at: whoever scheduled the job decided the key was due. It returns OutcomeSkipped
// when the key cannot be taken (finished, parked, leased by someone else, gone, or of an unknown
// operation), and an error only when the claim could not be made.
func (r *Resumer) ResumeKey(ctx context.Context, ref KeyRef) (Outcome, error) {
	k, err := r.cfg.Client.TakeOver(ctx, ref.Scope, ref.Key)
	if errors.Is(err, saga.ErrKeyNotFound) {
		return OutcomeSkipped, nil
	}
	if err != nil {
		return "", err
	}
	if k == nil {
		return OutcomeSkipped, nil
	}
	return r.resume(ctx, k), nil
}

func (r *Resumer) resume(ctx context.Context, k *saga.Key) Outcome {
	res, err := r.cfg.Client.ResumeClaimed(ctx, k)
	switch {
	case err == nil && res.Replayed:
		// Fenced: the stored answer is another execution's.
		return OutcomeSuperseded
	case err == nil:
		return OutcomeCompleted
	case errors.Is(err, saga.ErrInProgress):
		return OutcomeSuperseded
	case errors.Is(err, saga.ErrParked):
		return OutcomeParked
	}
	r.cfg.Logger.WarnContext(ctx, "resume did not finish the key", "operation", k.Operation, "tenant", k.Scope.Tenant, "key", k.Key, "attempt", k.Attempts, "error", err)
	return OutcomeFailed
}

func (res *RunResult) count(out Outcome) {
	switch out {
	case OutcomeCompleted:
		res.Completed++
	case OutcomeParked:
		res.Parked++
	case OutcomeSuperseded:
		res.Superseded++
	default:
		res.Failed++
	}
}
