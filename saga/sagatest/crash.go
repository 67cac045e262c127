package sagatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/internal/testkit/crash"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// checker runs the cases of one Check.
type checker struct {
	p   *CheckParams
	cfg saga.Config
	// plain is the client that recovers: another process, with the operation as declared.
	plain *saga.Client
}

func (p *CheckParams) newChecker(context.Context) (*checker, error) {
	cfg := saga.Config{}
	if p.Config != nil {
		cfg = *p.Config
	}
	cfg.DB = p.DB
	if cfg.Lease == 0 {
		cfg.Lease = defaultLease
	}
	c := &checker{p: p, cfg: cfg}
	plain, err := c.client(nil)
	if err != nil {
		return nil, err
	}
	c.plain = plain
	return c, nil
}

// client is a client running the operation, wrapped to die at the point dies names when set.
func (c *checker) client(dies *crashPoint) (*saga.Client, error) {
	cfg := c.cfg
	op := c.p.Operation
	if dies != nil {
		op = dies.wrap(op)
	}
	cfg.Operations = []*phases.Operation{op}
	cfg.Observer = nil
	return saga.NewClient(&cfg)
}

// run is one case: a first execution that crashes at point, then recovery.
func (c *checker) run(ctx context.Context, name, point, recovery string) (*CaseResult, error) {
	req, err := c.p.Request(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("error making the request: %w", err)
	}
	out := &CaseResult{Point: point, Recovery: recovery}
	dies := &crashPoint{at: point}
	first, err := c.client(dies)
	if err != nil {
		return nil, err
	}
	opName := c.p.Operation.Name
	crashed := crash.Run(func() { _, _ = first.Run(ctx, opName, clone(req)) })
	out.Crashed = crashed || point == "answer lost"
	if crashed {
		if err := c.waitForLease(ctx, req); err != nil {
			return nil, err
		}
	}

	var res *saga.Result
	if recovery == "resume" {
		res, err = c.resume(ctx, req)
	} else {
		res, err = c.retry(ctx, req)
	}
	if err != nil {
		return nil, fmt.Errorf("recovery did not finish the intent: %w", err)
	}
	out.Status = res.Response.Status
	again, err := c.retry(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("the finished intent did not replay: %w", err)
	}
	if !again.Replayed || again.Response.Status != res.Response.Status || !bytes.Equal(again.Response.Body, res.Response.Body) {
		return nil, fmt.Errorf("the answer did not replay byte for byte: %d %s, then %d %s (replayed %v)",
			res.Response.Status, res.Response.Body, again.Response.Status, again.Response.Body, again.Replayed)
	}
	if out.Effects, err = c.p.Effects(ctx, req); err != nil {
		return nil, fmt.Errorf("error counting effects: %w", err)
	}
	return out, nil
}

// waitForLease waits until the crashed execution's lease has run out (or there is no key).
func (c *checker) waitForLease(ctx context.Context, req *saga.Request) error {
	deadline := time.Now().Add(5*c.cfg.Lease + 5*time.Second)
	for time.Now().Before(deadline) {
		k, err := c.plain.KeyGet(ctx, req.Scope, req.Key)
		if errors.Is(err, saga.ErrKeyNotFound) || (err == nil && (!k.Leased || k.Status != saga.KeyStatusStarted)) {
			return nil
		}
		if err != nil {
			return err
		}
		time.Sleep(c.cfg.Lease / 10)
	}
	return errors.New("the crashed execution's lease never expired")
}

// retry sends the request until it has a final answer, as a client honouring 409 and 503
// would (Retry-After), for at most a minute.
func (c *checker) retry(ctx context.Context, req *saga.Request) (*saga.Result, error) {
	return c.untilAnswered(ctx, func() (*saga.Result, error) { return c.plain.Run(ctx, c.p.Operation.Name, clone(req)) })
}

// resume has the worker finish the key (a worker resumes only started keys; a crash before the
// first commit left none, and only the client's retry can go on), then reads its answer.
func (c *checker) resume(ctx context.Context, req *saga.Request) (*saga.Result, error) {
	_, err := c.untilAnswered(ctx, func() (*saga.Result, error) {
		res, err := c.plain.Resume(ctx, req.Scope, req.Key, &saga.ResumeOpts{Due: true})
		if errors.Is(err, saga.ErrKeyNotFound) || errors.Is(err, &saga.RefusedError{Reason: saga.RefusedNotDue}) {
			return &saga.Result{}, nil // nothing for the worker: the client's retry below goes on
		}
		return res, err
	})
	if err != nil {
		return nil, err
	}
	return c.retry(ctx, req)
}

func (c *checker) untilAnswered(ctx context.Context, try func() (*saga.Result, error)) (*saga.Result, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := try()
		var (
			inProgress *saga.InProgressError
			temporary  *saga.TransientError
			wait       time.Duration
		)
		switch {
		case err == nil:
			return res, nil
		case errors.As(err, &inProgress):
			wait = min(inProgress.LeaseRemaining, c.cfg.Lease/5) + time.Millisecond
		case errors.As(err, &temporary):
			wait = min(temporary.RetryAfter, 2*time.Second)
		default:
			return nil, err
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, fmt.Errorf("no final answer after a minute: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}

func clone(req *saga.Request) *saga.Request {
	out := *req
	return &out
}

// crashPoint makes the execution that reaches at die there, once.
type crashPoint struct {
	at   string
	done atomic.Bool
}

// hit is called at point; it does not return when the execution must die there. held is the
// connection of the open transaction, lost as a dead process loses it (crash.Die); nil in a
// call, which holds none.
func (c *crashPoint) hit(point string, held *pgx.Conn) {
	if point != c.at || !c.done.CompareAndSwap(false, true) {
		return
	}
	crash.Die(held)
}

// wrap returns op with every step hitting the crash points before and after its body.
func (c *crashPoint) wrap(op *phases.Operation) *phases.Operation {
	out := *op
	out.Steps = make([]phases.Step, len(op.Steps))
	for i, step := range op.Steps {
		s := runstate.Step(step)
		before, after := "before "+s.Name(), "after "+s.Name()
		var w runstate.Step
		if fn := s.Atomic(); fn != nil {
			w = runstate.NewAtomic(s.Name(), func(ctx context.Context, tx pgx.Tx, st *runstate.State) error {
				c.hit(before, tx.Conn())
				if err := fn(ctx, tx, st); err != nil {
					return err
				}
				c.hit(after, tx.Conn())
				return nil
			})
		} else {
			fn := s.Call()
			w = runstate.NewCall(s.Name(), func(ctx context.Context, st *runstate.State) error {
				c.hit(before, nil)
				if err := fn(ctx, st); err != nil {
					return err
				}
				c.hit(after, nil)
				return nil
			})
		}
		w = w.WithReference(s.Reference()).WithAliases(s.Aliases()...)
		if undo := s.Compensation(); undo != nil {
			w = w.WithCompensation(undo)
		}
		out.Steps[i] = phases.Step(w)
	}
	return &out
}
