package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/pgsaga/pgsaga/internal/sibling"
	"github.com/pgsaga/pgsaga/saga"
)

// resumeOutcome is what resuming one key came to; the worker's metrics count resumes by it.
type resumeOutcome string

const (
	// outcomeCompleted: the key finished and its response is stored (a success or a stored
	// business outcome such as a decline).
	outcomeCompleted resumeOutcome = "completed"
	// outcomeRescheduled: the attempt did not finish the key; it is still started, with its
	// next attempt scheduled (a transient failure or a pending call). Not parked: "failed" is
	// only ever a parked key's state.
	outcomeRescheduled resumeOutcome = "rescheduled"
	// outcomeParked: the key was parked for an operator (attempts exhausted, a permanent
	// failure, an outcome nothing can resolve).
	outcomeParked resumeOutcome = "parked"
	// outcomeSuperseded: another execution took the key over while this one ran (this one was
	// paused past its lease); this one's writes were fenced and the key is as the other left it.
	outcomeSuperseded resumeOutcome = "superseded"
	// outcomeSkipped: the key was not due (gone, finished, parked, leased by someone else, its
	// next attempt not yet reached, or of an operation this client lacks), so nothing ran.
	outcomeSkipped resumeOutcome = "skipped"
)

// runResult counts what one runOnce did.
type runResult struct {
	// Claimed is how many keys the pass took the lease of.
	Claimed int
	// Completed, Rescheduled, Parked and Superseded count the resumes by outcome.
	Completed   int
	Rescheduled int
	Parked      int
	Superseded  int
}

// resumer claims due keys and resumes them through a saga client: the resume jobs run it for the
// keys the sweep reserved (resumeKey, resumeKeys), and runOnce claims and resumes due keys
// itself, with no job queue.
type resumer struct {
	cfg *resumerConfig
}

// newResumer checks the config and returns a resumer.
func newResumer(cfg *resumerConfig) (*resumer, error) {
	if cfg == nil {
		cfg = &resumerConfig{}
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &resumer{cfg: cfg}, nil
}

// runOnce resumes up to BatchSize due keys, Concurrency at a time, each through its remaining
// phases, and returns when every started resume has returned. Each key is claimed only when a
// slot is free to resume it at once, so no key waits for a slot on a lease that runs out
// meanwhile. Cancelling ctx claims no further key. An error means a claim itself failed;
// resumes that fail are counted, logged and left to the next pass.
func (r *resumer) runOnce(ctx context.Context) (*runResult, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		res      = &runResult{}
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
				case err != nil:
					res.Claimed--
					claimErr = err
				case out == "":
					res.Claimed-- // none was due
				default:
					res.count(out)
				}
				mu.Unlock()
				if err != nil || out == "" {
					return
				}
			}
		})
	}
	wg.Wait()
	return res, claimErr
}

// resumeNext claims and resumes the next due key. It returns no outcome and no error when none
// is due, and an error only when the claim itself failed.
func (r *resumer) resumeNext(ctx context.Context) (resumeOutcome, error) {
	ref, res, err := r.cfg.Client.Internal(sibling.Token{}).ResumeNextDue(ctx)
	if ref == nil {
		return "", err
	}
	return r.outcome(ctx, *ref, res, err), nil
}

// resumeKey takes the lease of one key if it is due and resumes it; it is what a resume job runs
// for a key ReserveDueTx returned. It returns outcomeSkipped when the key is not due (finished,
// parked, leased by someone else, its next attempt not reached, gone, or of an unknown
// operation), and an error only when the database could not be reached to claim it.
func (r *resumer) resumeKey(ctx context.Context, ref sibling.KeyRef) (resumeOutcome, error) {
	res, err := r.cfg.Client.Resume(ctx, saga.Scope{Tenant: ref.Tenant, Actor: ref.Actor}, ref.Key, &saga.ResumeOpts{Due: true})
	switch {
	case errors.Is(err, &saga.RefusedError{Reason: saga.RefusedNotDue}), errors.Is(err, saga.ErrKeyNotFound),
		errors.Is(err, &saga.RefusedError{Reason: saga.RefusedUnknownOperation}),
		err == nil && res.Replayed:
		return outcomeSkipped, nil
	}
	var unavailable *saga.TransientError
	if err != nil && !errors.As(err, &unavailable) && !errors.As(err, new(*saga.ParkedError)) && !errors.Is(err, saga.ErrLeaseLost) {
		// The takeover itself failed: let the job retry.
		return "", err
	}
	return r.outcome(ctx, ref, res, err), nil
}

// resumeKeys takes the leases of those of refs that are due, in one statement, and resumes them
// all at once (ResumeDue of saga.Client.Internal); it is what a resume job runs for a batch of keys
// ReserveDueTx returned. It returns one outcome per ref, in order (outcomeSkipped for a key that
// was not due), and an error only when the database could not be reached to claim them.
func (r *resumer) resumeKeys(ctx context.Context, refs []sibling.KeyRef) ([]resumeOutcome, error) {
	results, err := r.cfg.Client.Internal(sibling.Token{}).ResumeDue(ctx, refs)
	if err != nil {
		return nil, err
	}
	out := make([]resumeOutcome, len(refs))
	for i, res := range results {
		out[i] = outcomeSkipped
		if res.Taken {
			out[i] = r.outcome(ctx, refs[i], res.Result, res.Err)
		}
	}
	return out, nil
}

func (r *resumer) outcome(ctx context.Context, ref sibling.KeyRef, res *saga.Result, err error) resumeOutcome {
	switch {
	case err == nil:
		return outcomeCompleted
	case errors.Is(err, saga.ErrLeaseLost):
		return outcomeSuperseded
	case errors.As(err, new(*saga.ParkedError)):
		return outcomeParked
	}
	r.cfg.Logger.WarnContext(ctx, "resume did not finish the key", "tenant", ref.Tenant, "key", ref.Key, "error", err)
	return outcomeRescheduled
}

func (res *runResult) count(out resumeOutcome) {
	switch out {
	case outcomeCompleted:
		res.Completed++
	case outcomeParked:
		res.Parked++
	case outcomeSuperseded:
		res.Superseded++
	default:
		res.Rescheduled++
	}
}

// resumerConfig configures a resumer.
type resumerConfig struct {
	// Client resumes the claimed keys; its operations decide which keys this resumer claims and
	// its Lease is the lease a claim takes. Required.
	Client *saga.Client
	// BatchSize is how many due keys one runOnce resumes at most. Defaults to 100.
	BatchSize int
	// Concurrency is how many keys are resumed at once. Defaults to 4.
	Concurrency int
	// Logger receives one line per resume that did not complete. Defaults to the client's
	// logger.
	Logger *slog.Logger
}

// withDefaults returns a copy of the config with every unset field given its default.
func (c *resumerConfig) withDefaults() *resumerConfig {
	out := *c
	if out.BatchSize == 0 {
		out.BatchSize = 100
	}
	if out.Concurrency == 0 {
		out.Concurrency = 4
	}
	if out.Logger == nil && out.Client != nil {
		out.Logger = out.Client.Config().Logger
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

func (c *resumerConfig) validate() error {
	if c.Client == nil {
		return errors.New("worker: resumer config: Client is required")
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("worker: resumer config: BatchSize must be at least 1, got %d", c.BatchSize)
	}
	if c.Concurrency < 1 {
		return fmt.Errorf("worker: resumer config: Concurrency must be at least 1, got %d", c.Concurrency)
	}
	return nil
}
