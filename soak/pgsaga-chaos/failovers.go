package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/soak/internal/pgcluster"
)

// failoverKind is one way a Patroni pair's primary is replaced.
type failoverKind int

const (
	// failoverKill kills the primary's postmaster with SIGKILL; its Patroni releases the leader
	// lock at once and the standby is promoted.
	failoverKill failoverKind = iota
	// failoverPartition freezes the whole primary node (its Patroni and PostgreSQL) until the
	// standby is promoted, the leader lock's TTL after; healed, the old primary finds the lock
	// lost and is demoted.
	failoverPartition
	// failoverSwitchover is Patroni's planned switchover.
	failoverSwitchover
	// failoverLossy, on an asynchronous pair only, cuts the primary's replication, lets it
	// acknowledge the clients' commits for Config.LossWindow, then kills it: the standby is
	// promoted without them.
	failoverLossy
)

func (k failoverKind) String() string {
	switch k {
	case failoverKill:
		return "kill -9 primary"
	case failoverPartition:
		return "partition primary"
	case failoverSwitchover:
		return "switchover"
	case failoverLossy:
		return "lossy failover"
	}
	return fmt.Sprintf("failover kind %d", int(k))
}

// failoverTimeout bounds one failover, from the pair healthy to the pair healthy again.
const failoverTimeout = 3 * time.Minute

// failover is one failover as it went.
type failover struct {
	kind     failoverKind
	from, to string // the old and the new primary
	// at is when the primary failed: for a lossy failover when it was killed, at the end of its
	// loss window, which began at lossFrom.
	at, lossFrom time.Time
	// primaryAfter is how long after the fault a new primary took read-write sessions (what a
	// client waits for); healthyAfter how long until the old primary streamed from it again.
	primaryAfter, healthyAfter time.Duration
	// inPlace is set when Patroni started the old primary again instead of failing over.
	inPlace bool
	err     error
}

// failoverLog runs a Patroni pair's failovers, one at a time, and keeps what each did.
type failoverLog struct {
	cfg *Config
	tl  *timeline
	rng *rand.Rand
	// created counts the new 201s the clients got between two moments: a lossy failover's
	// window lasts until it holds one.
	created func(from, to time.Time) int

	mu   sync.Mutex
	list []failover
}

func newFailoverLog(cfg *Config, tl *timeline, created func(from, to time.Time) int) *failoverLog {
	return &failoverLog{cfg: cfg, tl: tl, rng: rand.New(rand.NewPCG(cfg.Seed, 3)), created: created}
}

// maxLossWindows bounds a lossy failover's window, in Config.LossWindow: it waits for a client's
// new 201 beyond the first, but not forever (every serve may be down meanwhile).
const maxLossWindows = 10

// run fails e's pair over until ctx ends: it waits a draw around Config.FailoverEvery, then
// replaces the primary by the next kind in a shuffled round, holding e.db (no database pause
// meanwhile) until the pair is healthy again. A failover under way when ctx ends is finished.
func (l *failoverLog) run(ctx context.Context, e *env) {
	var round []failoverKind
	for {
		if !sleepCtx(ctx, l.cfg.FailoverEvery/2+time.Duration(l.rng.Int64N(int64(l.cfg.FailoverEvery)+1))) {
			return
		}
		if len(round) == 0 {
			round = l.shuffled()
		}
		kind := round[0]
		round = round[1:]
		e.db.Lock()
		fo := l.one(context.WithoutCancel(ctx), e.pair, kind)
		e.db.Unlock()
		l.mu.Lock()
		l.list = append(l.list, fo)
		l.mu.Unlock()
	}
}

// shuffled is every kind the pair's replication allows once, in a random order.
func (l *failoverLog) shuffled() []failoverKind {
	kinds := []failoverKind{failoverKill, failoverPartition, failoverSwitchover}
	if l.cfg.Cluster == ClusterPatroniAsync {
		kinds = append(kinds, failoverLossy)
	}
	l.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	return kinds
}

// one replaces c's primary by kind and waits until c is healthy again.
func (l *failoverLog) one(ctx context.Context, c *pgcluster.Cluster, kind failoverKind) (fo failover) {
	ctx, cancel := context.WithTimeout(ctx, failoverTimeout)
	defer cancel()
	fo.kind = kind
	defer func() {
		if fo.err != nil {
			l.tl.add("failover: %s: ERROR: %v", kind, fo.err)
		}
	}()
	primary, _, err := c.WaitHealthy(ctx)
	if err != nil {
		fo.err = err
		return fo
	}
	fo.from = primary.Name
	l.tl.add("failover: %s (%s)", kind, fo.from)
	fo.at = time.Now()
	var next *pgcluster.Node
	switch kind {
	case failoverKill:
		if _, err = c.KillPrimary(ctx); err == nil {
			next, fo.inPlace, err = l.waitNewPrimary(ctx, c, primary)
		}
	case failoverPartition:
		var p *pgcluster.Partition
		if p, err = c.PartitionPrimary(ctx); err == nil {
			next, fo.inPlace, err = l.waitNewPrimary(ctx, c, primary)
			err = errors.Join(err, p.Heal())
		}
	case failoverSwitchover:
		next, err = c.Switchover(ctx)
	case failoverLossy:
		next, err = c.LossyFailover(ctx, func(ctx context.Context) error {
			// The serves commit meanwhile, acknowledged by a primary whose standby gets none of it.
			// It lasts LossWindow, and longer until a client got a new 201 in it (other faults may
			// have every serve down at the time), so that what it loses was acknowledged.
			fo.lossFrom = time.Now()
			l.tl.add("failover: the primary's replication is cut; its commits from now on will be lost")
			sleepCtx(ctx, l.cfg.LossWindow)
			for i := 1; i < maxLossWindows && l.created(fo.lossFrom, time.Now()) == 0 && ctx.Err() == nil; i++ {
				sleepCtx(ctx, l.cfg.LossWindow)
			}
			fo.at = time.Now()
			l.tl.add("failover: killing the primary after %s of commits its standby lacks (%d new 201s answered meanwhile)",
				fo.at.Sub(fo.lossFrom).Round(time.Millisecond), l.created(fo.lossFrom, fo.at))
			return ctx.Err()
		})
	}
	fo.primaryAfter = time.Since(fo.at)
	if next != nil {
		fo.to = next.Name
	}
	if err != nil {
		fo.err = err
		return fo
	}
	l.tl.add("failover: %s: %s is the primary after %s", kind, fo.to, fo.primaryAfter.Round(time.Millisecond))
	if _, _, err := c.WaitHealthy(ctx); err != nil {
		fo.err = fmt.Errorf("the pair did not become healthy again: %w", err)
		return fo
	}
	fo.healthyAfter = time.Since(fo.at)
	l.tl.add("failover: %s: healthy again after %s (%s streaming from %s)", kind, fo.healthyAfter.Round(time.Millisecond), fo.from, fo.to)
	return fo
}

// promoteTimeout bounds the wait for the standby's promotion after a kill or a partition:
// Patroni starts an asynchronous pair's old primary again in place when its standby lags too
// far behind to be promoted.
const promoteTimeout = time.Minute

// waitNewPrimary waits until the standby is the primary; when it is not promoted within
// promoteTimeout, until the old primary takes writes again (inPlace).
func (l *failoverLog) waitNewPrimary(ctx context.Context, c *pgcluster.Cluster, old *pgcluster.Node) (next *pgcluster.Node, inPlace bool, err error) {
	wait, cancel := context.WithTimeout(ctx, promoteTimeout)
	next, err = c.WaitForPrimary(wait, old)
	cancel()
	if err == nil || ctx.Err() != nil {
		return next, false, err
	}
	l.tl.add("failover: the standby was not promoted within %s; waiting for any primary", promoteTimeout)
	next, err = c.WaitForPrimary(ctx, nil)
	return next, next == old, err
}

// all returns the failovers done so far.
func (l *failoverLog) all() []failover {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}
