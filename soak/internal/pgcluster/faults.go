package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// KillPrimary kills the primary's postmaster with SIGKILL, as a crash of PostgreSQL does, and
// returns the node it ran on. Its backends notice and exit; its Patroni notices on its next
// loop and, the cluster being configured with primary_start_timeout 0, releases the leader lock
// so that the standby is promoted (WaitForPrimary(ctx, killed) waits for that), then rejoins as
// a standby. It returns once the kill is done, not the failover.
func (c *Cluster) KillPrimary(ctx context.Context) (*Node, error) {
	p, err := c.Primary(ctx)
	if err != nil {
		return nil, fmt.Errorf("error killing the primary: %w", err)
	}
	pid, err := p.postmaster()
	if err != nil {
		return nil, fmt.Errorf("error killing the primary: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("error killing the primary's postmaster %d: %w", pid, err)
	}
	c.logger.Info("killed the primary's postmaster", "node", p.Name, "pid", pid)
	return p, nil
}

// Partition is a node frozen by PartitionPrimary until Heal.
type Partition struct {
	// Node is the frozen node.
	Node *Node

	c        *Cluster
	patroni  int   // Patroni's pid, which leads its process group
	postgres []int // the postmaster and its children
	at       time.Time
}

// PartitionPrimary cuts the primary node off: its Patroni and every PostgreSQL process are
// stopped (SIGSTOP, Patroni first so that it does not see PostgreSQL stop) until Heal. What a
// partition in both directions, or a paused VM, does: the node cannot renew the leader lock, so
// the standby is promoted once the lock's TTL has run out (WaitForPrimary(ctx, p.Node) waits for
// that); its clients' connections and new connection attempts hang, with no error. Healed, the
// node still believes it is the primary until its Patroni's next loop finds the lock lost and
// demotes it. It returns once every process of the node is stopped.
//
// The whole node, because a partition cuts the node's PostgreSQL and its Patroni off together:
// PostgreSQL frozen alone leaves its Patroni deciding about the lock from a hung database, and
// Patroni frozen alone leaves PostgreSQL serving as a primary while the standby is promoted (a
// hung Patroni; Partition.HealPostgres gives that window on purpose, after the failover).
func (c *Cluster) PartitionPrimary(ctx context.Context) (*Partition, error) {
	p, err := c.Primary(ctx)
	if err != nil {
		return nil, fmt.Errorf("error partitioning the primary: %w", err)
	}
	return c.Partition(p)
}

// Partition freezes node n as PartitionPrimary does, whatever its role.
func (c *Cluster) Partition(n *Node) (*Partition, error) {
	pm, err := n.postmaster()
	if err != nil {
		return nil, fmt.Errorf("error partitioning %s: %w", n.Name, err)
	}
	part := &Partition{Node: n, c: c, patroni: n.patroni.Pid(), at: time.Now()}
	c.mu.Lock()
	c.frozen[part] = true
	c.mu.Unlock()
	if err := signalGroup(part.patroni, syscall.SIGSTOP, []int{part.patroni}); err != nil {
		_ = part.Heal()
		return nil, fmt.Errorf("error partitioning %s: %w", n.Name, err)
	}
	part.postgres, err = freezePostgres(pm)
	if err != nil {
		_ = part.Heal()
		return nil, fmt.Errorf("error partitioning %s: %w", n.Name, err)
	}
	c.logger.Info("partitioned", "node", n.Name, "patroni", part.patroni, "postmaster", pm)
	return part, nil
}

// HealPostgres resumes the frozen node's PostgreSQL only: its clients' statements run, and it
// still believes it is the primary, for as long as its Patroni stays frozen (a Patroni that hangs
// while its PostgreSQL serves). What such a zombie primary does with a commit can be watched
// before Heal lets its Patroni demote it.
func (p *Partition) HealPostgres() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	signalAll(p.postgres, syscall.SIGCONT)
	p.postgres = nil
}

// Heal resumes the frozen node: PostgreSQL first (its clients' statements run, as when a
// network comes back), then Patroni. Healing a healed partition does nothing.
func (p *Partition) Heal() error {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if !p.c.frozen[p] {
		return nil
	}
	delete(p.c.frozen, p)
	signalAll(p.postgres, syscall.SIGCONT)
	p.postgres = nil
	if err := signalGroup(p.patroni, syscall.SIGCONT, nil); err != nil {
		return fmt.Errorf("error healing the partition of %s: %w", p.Node.Name, err)
	}
	p.c.logger.Info("healed", "node", p.Node.Name, "after", time.Since(p.at).Round(time.Millisecond))
	return nil
}

// Switchover asks Patroni for a planned switchover from the primary to the standby (REST POST
// /switchover: the primary is shut down cleanly, the standby promoted once it has every WAL
// record, and the old primary restarted as its standby) and returns the new primary once it
// accepts read-write sessions. The cluster must be healthy (WaitHealthy).
func (c *Cluster) Switchover(ctx context.Context) (*Node, error) {
	p, err := c.Primary(ctx)
	if err != nil {
		return nil, fmt.Errorf("error switching over: %w", err)
	}
	s := c.other(p)
	if _, err := p.rest(ctx, http.MethodPost, "/switchover", map[string]string{"leader": p.Name, "candidate": s.Name}, nil); err != nil {
		return nil, fmt.Errorf("error switching over: %w", err)
	}
	c.logger.Info("switched over", "from", p.Name, "to", s.Name)
	return c.WaitForPrimary(ctx, p)
}

// ErrSynchronous is returned by LossyFailover in synchronous mode, where a commit is not
// acknowledged before the standby has it.
var ErrSynchronous = errors.New("a lossy failover needs asynchronous replication")

// LossyFailover fails over losing commits the primary acknowledged, as a primary whose host dies
// in asynchronous mode does: it waits until the standby has everything, freezes the primary's
// walsender (so nothing more leaves for the standby), runs commit (which commits through the
// cluster's URL, reaching the primary, and returns once the commits are acknowledged), then kills
// every PostgreSQL process of the primary at once with SIGKILL, the frozen walsender included.
// The standby is promoted without what commit did, and the old primary rejoins, rewound to the
// standby's history: those commits are gone from both. It returns the new primary.
//
// Freezing the standby's walreceiver instead would not lose anything: the primary's walsender
// would still send into the socket, whose buffer the walreceiver reads once thawed.
//
// It fails (and leaves the cluster as it is) in synchronous mode, and when Patroni restarts the
// old primary in place instead of failing over (the standby more than
// Config.MaximumLagOnFailover behind).
func (c *Cluster) LossyFailover(ctx context.Context, commit func(ctx context.Context) error) (*Node, error) {
	if c.sync.Load() {
		return nil, ErrSynchronous
	}
	p, s, err := c.WaitHealthy(ctx)
	if err != nil {
		return nil, fmt.Errorf("error in the lossy failover: %w", err)
	}
	pm, err := p.postmaster()
	if err != nil {
		return nil, fmt.Errorf("error in the lossy failover: %w", err)
	}
	lsn, err := queryLSN(ctx, p, "SELECT pg_current_wal_lsn()::text")
	if err != nil {
		return nil, fmt.Errorf("error in the lossy failover: %w", err)
	}
	if err := c.waitReceived(ctx, s, lsn); err != nil {
		return nil, fmt.Errorf("error in the lossy failover: %w", err)
	}
	walsender := 0
	for _, pid := range children(pm) {
		if strings.Contains(childproc.Cmdline(pid), "walsender") {
			walsender = pid
		}
	}
	if walsender == 0 {
		return nil, fmt.Errorf("error in the lossy failover: no walsender on %s", p.Name)
	}
	if err := syscall.Kill(walsender, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("error in the lossy failover: freezing the walsender: %w", err)
	}
	if !waitFor(5*time.Second, func() bool { return childproc.State(walsender) == "T" }) {
		_ = syscall.Kill(walsender, syscall.SIGCONT)
		return nil, fmt.Errorf("error in the lossy failover: walsender %d not stopped", walsender)
	}
	c.logger.Info("froze the primary's walsender", "node", p.Name, "pid", walsender, "standby_has", lsn)
	if err := commit(ctx); err != nil {
		_ = syscall.Kill(walsender, syscall.SIGCONT)
		return nil, fmt.Errorf("error in the lossy failover: the commit function failed: %w", err)
	}
	// Every process at once, the postmaster stopped first so it forks no more: a postmaster
	// killed alone would leave the frozen walsender, which would send what it has once resumed.
	procs, err := freezePostgres(pm)
	signalAll(procs, syscall.SIGKILL)
	if err != nil {
		return nil, fmt.Errorf("error in the lossy failover: killing the primary: %w", err)
	}
	c.logger.Info("killed the primary with commits the standby lacks", "node", p.Name)
	next, err := c.WaitForPrimary(ctx, nil)
	for err == nil && next == p {
		// Its Patroni may still call it the primary for a moment: wait for it to say otherwise
		// or for its PostgreSQL to come back, which means it was restarted in place.
		if restarted, ok := postmasterPID(p.dataDir()); ok && restarted != pm {
			return nil, fmt.Errorf("error in the lossy failover: Patroni restarted %s in place instead of failing over (see MaximumLagOnFailover)", p.Name)
		}
		if err = sleepCtx(ctx, pollInterval); err == nil {
			next, err = c.WaitForPrimary(ctx, nil)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("error in the lossy failover: %w", err)
	}
	return next, nil
}

// waitReceived waits until standby s has received WAL up to lsn.
func (c *Cluster) waitReceived(ctx context.Context, s *Node, lsn string) error {
	if err := waitTrue(ctx, s, "SELECT pg_last_wal_receive_lsn() >= $1::pg_lsn", lsn); err != nil {
		return fmt.Errorf("waiting for %s to receive WAL up to %s: %w", s.Name, lsn, err)
	}
	return nil
}

func queryLSN(ctx context.Context, n *Node, sql string) (string, error) {
	var lsn string
	err := queryRow(ctx, n, sql, nil, &lsn)
	return lsn, err
}

// queryRow runs a one-row query on node n alone.
func queryRow(ctx context.Context, n *Node, sql string, args []any, dest ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}
