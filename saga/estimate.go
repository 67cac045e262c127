package saga

import (
	"sync/atomic"
	"time"

	"github.com/pgsaga/pgsaga/internal/runstate"
	"github.com/pgsaga/pgsaga/phases"
)

// A 409's Retry-After is an estimate of when the execution in flight will have finished: what
// is left of its steps, from the recovery point the duplicate reads in the key and the time since
// that point was written, by what this client measured of its own executions of the operation
// (how long, from each recovery point, they took to complete). Never later than the lease left:
// once the lease ends, a retry takes the key over. With nothing measured yet, the lease left.

// finishTimes are, per recovery point of one operation, how long its executions took to complete
// from there (nanoseconds, a moving average).
type finishTimes map[string]*atomic.Int64

func newFinishTimes(op *phases.Operation) finishTimes {
	f := finishTimes{phases.RecoveryPointStarted: {}}
	for _, step := range op.Steps {
		if st := runstate.Step(step); st.Atomic() != nil {
			f[st.Name()] = &atomic.Int64{}
		}
	}
	return f
}

// learn folds one execution's time from rp to completion into the average (one eighth each).
func (f finishTimes) learn(rp string, took time.Duration) {
	avg := f[rp]
	if avg == nil || took <= 0 {
		return
	}
	for {
		old := avg.Load()
		next := int64(took)
		if old > 0 {
			next = old + (int64(took)-old)/8
		}
		if avg.CompareAndSwap(old, next) {
			return
		}
	}
}

// left estimates what is left of an execution that wrote rp since ago, within lease: the lease
// when nothing was measured from rp.
func (f finishTimes) left(rp string, since, lease time.Duration) time.Duration {
	avg := f[rp]
	if avg == nil || avg.Load() == 0 {
		return lease
	}
	return min(max(time.Duration(avg.Load())-since, 0), lease)
}

// reached is a recovery point an execution wrote, and when.
type reached struct {
	rp string
	at time.Time
}

// maxReached is how many recovery points an execution remembers for learning: enough for any
// operation's atomic phases, without allocating.
const maxReached = 8

// reach records that the execution wrote rp now.
func (e *execution) reach(rp string) {
	if e.nreached < maxReached {
		e.reached[e.nreached] = reached{rp: rp, at: time.Now()}
		e.nreached++
	}
}

// learnFinish teaches the client how long the execution took to complete from each point it wrote.
func (e *execution) learnFinish() {
	f := e.c.finish[e.op]
	now := time.Now()
	for _, r := range e.reached[:e.nreached] {
		f.learn(r.rp, now.Sub(r.at))
	}
	e.nreached = 0
}
