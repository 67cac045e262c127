package recovery

import (
	"context"
	"errors"
	"sync"

	"github.com/pgsaga/pgsaga/saga"
)

// Outcome is what resuming one key came to.
type Outcome string

const (
	// OutcomeCompleted: the key finished and its response is stored (a success or a stored
	// business outcome such as a decline).
	OutcomeCompleted Outcome = "completed"
	// OutcomeRescheduled: the attempt did not finish the key; it is still started, with its
	// next attempt scheduled (a transient failure or a pending call). Not parked: "failed" is
	// only ever a parked key's state.
	OutcomeRescheduled Outcome = "rescheduled"
	// OutcomeParked: the key was parked for an operator (attempts exhausted, a permanent
	// failure, an outcome nothing can resolve).
	OutcomeParked Outcome = "parked"
	// OutcomeSuperseded: another execution took the key over while this one ran (this one was
	// paused past its lease); this one's writes were fenced and the key is as the other left it.
	OutcomeSuperseded Outcome = "superseded"
	// OutcomeSkipped: the key was not due (gone, finished, parked, leased by someone else, its
	// next attempt not yet reached, or of an operation this client lacks), so nothing ran.
	OutcomeSkipped Outcome = "skipped"
)

// RunResult counts what one RunOnce did.
type RunResult struct {
	// Claimed is how many keys the pass took the lease of.
	Claimed int
	// Completed, Rescheduled, Parked and Superseded count the resumes by outcome (see Outcome).
	Completed   int
	Rescheduled int
	Parked      int
	Superseded  int
}

// Resumer claims due keys and resumes them through a saga client.
type Resumer struct {
	cfg *Config
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
	return &Resumer{cfg: cfg}, nil
}

// RunOnce resumes up to BatchSize due keys, Concurrency at a time, each through its remaining
// phases, and returns when every started resume has returned. Each key is claimed only when a
// slot is free to resume it at once, so no key waits for a slot on a lease that runs out
// meanwhile. Cancelling ctx claims no further key. An error means a claim itself failed;
// resumes that fail are counted, logged and left to the next pass.
func (r *Resumer) RunOnce(ctx context.Context) (*RunResult, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		res      = &RunResult{}
		claimErr error
	)
	// claim reserves one of the pass's BatchSize claims.
	claim := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if res.Claimed >= r.cfg.BatchSize || claimErr != nil || ctx.Err() != nil {
			return false
		}
		res.Claimed++
		return true
	}
	for range r.cfg.Concurrency {
		wg.Go(func() {
			for claim() {
				out, err := r.resumeNext(ctx)
				mu.Lock()
				switch {
				case errors.Is(err, saga.ErrNoDueKey):
					res.Claimed--
				case err != nil:
					res.Claimed--
					claimErr = err
				default:
					res.count(out)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return res, claimErr
}

// resumeNext claims and resumes the next due key. It returns saga.ErrNoDueKey when none is due,
// and an error only when the claim itself failed.
func (r *Resumer) resumeNext(ctx context.Context) (Outcome, error) {
	ref, res, err := r.cfg.Client.ResumeNextDue(ctx)
	if ref == nil {
		return "", err
	}
	return r.outcome(ctx, *ref, res, err), nil
}

// ResumeKey takes the lease of one key if it is due and resumes it; it is what a resume job runs
// for a key ReserveDueTx returned. It returns OutcomeSkipped when the key is not due (finished,
// parked, leased by someone else, its next attempt not reached, gone, or of an unknown
// operation), and an error only when the database could not be reached to claim it.
func (r *Resumer) ResumeKey(ctx context.Context, ref saga.KeyRef) (Outcome, error) {
	res, err := r.cfg.Client.Resume(ctx, ref.Scope, ref.Key, &saga.ResumeOpts{Due: true})
	switch {
	case errors.Is(err, saga.ErrNotDue), errors.Is(err, saga.ErrKeyNotFound), errors.Is(err, saga.ErrUnknownOperation),
		err == nil && res.Replayed:
		return OutcomeSkipped, nil
	}
	var unavailable *saga.TransientError
	if err != nil && !errors.As(err, &unavailable) && !errors.Is(err, saga.ErrParked) && !errors.Is(err, saga.ErrLeaseLost) {
		// The takeover itself failed: let the job retry.
		return "", err
	}
	return r.outcome(ctx, ref, res, err), nil
}

// ResumeKeys takes the leases of those of refs that are due, in one statement, and resumes them
// all at once (saga.Client.ResumeDue); it is what a resume job runs for a batch of keys
// ReserveDueTx returned. It returns one Outcome per ref, in order (OutcomeSkipped for a key that
// was not due), and an error only when the database could not be reached to claim them.
func (r *Resumer) ResumeKeys(ctx context.Context, refs []saga.KeyRef) ([]Outcome, error) {
	results, err := r.cfg.Client.ResumeDue(ctx, refs)
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, len(refs))
	for i, res := range results {
		out[i] = OutcomeSkipped
		if res.Taken {
			out[i] = r.outcome(ctx, refs[i], res.Result, res.Err)
		}
	}
	return out, nil
}

func (r *Resumer) outcome(ctx context.Context, ref saga.KeyRef, res *saga.Result, err error) Outcome {
	switch {
	case err == nil:
		return OutcomeCompleted
	case errors.Is(err, saga.ErrLeaseLost):
		return OutcomeSuperseded
	case errors.Is(err, saga.ErrParked):
		return OutcomeParked
	}
	r.cfg.Logger.WarnContext(ctx, "resume did not finish the key", "tenant", ref.Scope.Tenant, "key", ref.Key, "error", err)
	return OutcomeRescheduled
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
		res.Rescheduled++
	}
}
