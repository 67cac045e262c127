package worker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/pgsaga/pgsaga/internal/listencheck"
	"github.com/pgsaga/pgsaga/internal/pgavail"
	"github.com/pgsaga/pgsaga/saga"
)

// The background start's pace: the first retry after about startRetryFirst, each next one twice
// as late, never later than startRetryMax, each wait spread by ±20% so that workers that lost
// their database together do not come back in step.
const (
	startRetryFirst = 250 * time.Millisecond
	startRetryMax   = 5 * time.Second
)

// startPingTimeout bounds the ping before each attempt to start: a database that does not
// answer (a host gone from the network) must hold neither Start nor the loop, nor Stop, for
// minutes.
const startPingTimeout = 10 * time.Second

// startLoop is a start being retried in the background; cancel ends it, done is closed when it
// has ended (started or not).
type startLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// ended reports whether the loop has ended: River started, or the loop's context ended.
func (l *startLoop) ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// startRiver starts River on ctx, the worker's lifetime context, notes that it runs, and starts
// the worker's sweep beside it.
func (w *Worker) startRiver(ctx context.Context) error {
	if err := w.river.Start(ctx); err != nil {
		return err
	}
	w.mu.Lock()
	w.riverStarted = true
	w.mu.Unlock()
	w.startSweeping(ctx)
	return nil
}

// keepStarting retries River's start in the background, after firstErr, until it starts, ctx
// ends or the loop is cancelled (Stop). Each failure is logged: at warn while the database
// cannot be reached, at error when it answered and refused (a restored database without River's
// tables, say: someone may yet migrate it).
func (w *Worker) keepStarting(ctx context.Context, firstErr error) *startLoop {
	loopCtx, cancel := context.WithCancel(ctx)
	l := &startLoop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer cancel()
		err, delay := firstErr, startRetryFirst
		for attempt := 1; ; attempt++ {
			wait := spread(delay)
			level := slog.LevelWarn
			if !pgavail.Unavailable(err) {
				level = slog.LevelError
			}
			w.cfg.Logger.Log(ctx, level, "worker start failed, retrying", "attempt", attempt,
				"retry_in", wait.Round(time.Millisecond), "error", err)
			select {
			case <-loopCtx.Done():
				return
			case <-time.After(wait):
			}
			if err = w.tryStart(ctx, loopCtx); err == nil {
				w.cfg.Logger.InfoContext(ctx, "worker started", "attempts", attempt+1)
				return
			}
			if loopCtx.Err() != nil {
				return
			}
			delay = min(2*delay, startRetryMax)
		}
	}()
	return l
}

// tryStart is one attempt to start: a ping bounded by startPingTimeout and attemptCtx (the
// background loop's, so that Stop need not wait for a database that does not answer), the check
// that notifications reach River's LISTEN (unless PollOnly), then River's start on ctx. The ping also spares River's own error logs of a start that cannot
// succeed.
func (w *Worker) tryStart(ctx, attemptCtx context.Context) error {
	pingCtx, cancel := context.WithTimeout(attemptCtx, startPingTimeout)
	defer cancel()
	if err := w.cfg.Pool.Ping(pingCtx); err != nil {
		return fmt.Errorf("error reaching the database: %w", err)
	}
	if !w.cfg.PollOnly {
		heard, err := listencheck.Heard(attemptCtx, w.cfg.Pool, w.cfg.Pool)
		switch {
		case err != nil:
			return err
		case !heard:
			return fmt.Errorf("River listens on Config.Pool for new jobs and leadership changes, and %w: "+
				"Config.Pool goes through a pooler in transaction pooling mode? Set Config.PollOnly", saga.ErrListenUnheard)
		}
	}
	// River runs on the context it starts with: ctx, which Stop does not cancel, so that Stop
	// can stop it gracefully.
	return w.startRiver(ctx)
}

// spread returns d give or take 20%.
func spread(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}
