package pgcluster

import (
	"fmt"
	"log/slog"
	"time"
)

// Config configures Start. The zero value is usable: an asynchronous pair with the test timings.
type Config struct {
	// BaseDir is where the cluster's directory is created. When the process is root it must be
	// traversable by RunAsUser.
	// Defaults to /dev/shm when it exists, is writable and has 1 GiB free, else os.TempDir().
	BaseDir string

	// BinDir is the directory holding the PostgreSQL server binaries, given to Patroni.
	// Defaults to the directory of initdb in PATH, else the highest-versioned
	// /usr/lib/postgresql/*/bin.
	BinDir string

	// Patroni is the patroni program. Defaults to "patroni" in PATH.
	Patroni string

	// Etcd is the etcd server program. Defaults to "etcd" in PATH.
	Etcd string

	// Logger receives lifecycle events: start, faults, failovers seen, stop.
	// Defaults to a logger that discards everything.
	Logger *slog.Logger

	// Synchronous turns on Patroni's synchronous_mode: the primary names the standby in
	// synchronous_standby_names, a commit is acknowledged only once the standby has it, and only
	// a standby known to be synchronous may be promoted. Defaults to false: asynchronous
	// replication, where a failover may lose commits the primary acknowledged.
	Synchronous bool

	// SynchronousStrict turns on synchronous_mode_strict: with no synchronous standby the primary
	// stops acknowledging commits rather than fall back to asynchronous replication. Only with
	// Synchronous. Defaults to false.
	SynchronousStrict bool

	// TTL is the leader lock's time to live: how long a primary that stopped renewing it (frozen,
	// cut off) keeps it, so the floor of a failover's duration after a partition.
	// Defaults to 5s.
	TTL time.Duration

	// LoopWait is how long Patroni sleeps between two runs of its HA loop: how soon a node notices
	// a crashed PostgreSQL or a lost lock. Defaults to 1s.
	LoopWait time.Duration

	// RetryTimeout bounds Patroni's retries of the DCS and PostgreSQL operations; a primary that
	// cannot reach the DCS for that long demotes itself. Patroni needs TTL >= LoopWait +
	// 2*RetryTimeout. Defaults to 2s.
	RetryTimeout time.Duration

	// MaximumLagOnFailover is how far behind the primary's last known WAL position (in bytes) a
	// standby may be and still be promoted. Defaults to 1 MiB (Patroni's default), enough for the
	// lossy failover of asynchronous mode.
	MaximumLagOnFailover int64

	// Settings are extra PostgreSQL parameters for both nodes, applied after ours.
	// Defaults to none.
	Settings map[string]string

	// StartTimeout bounds Start: etcd, both nodes bootstrapped, the standby streaming (and
	// synchronous in Synchronous mode). Defaults to 60s.
	StartTimeout time.Duration

	// RunAsUser is the user etcd, Patroni and PostgreSQL run as when the process is root. Ignored
	// when it is not root: they run as the current user.
	// Defaults to "postgres", or "nobody" when there is no "postgres" user.
	RunAsUser string
}

// WithDefaults returns a copy of c (which may be nil) with every unset field given its default.
func (c *Config) WithDefaults() *Config {
	out := &Config{}
	if c != nil {
		*out = *c
	}
	if out.Patroni == "" {
		out.Patroni = "patroni"
	}
	if out.Etcd == "" {
		out.Etcd = "etcd"
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.TTL == 0 {
		out.TTL = 5 * time.Second
	}
	if out.LoopWait == 0 {
		out.LoopWait = time.Second
	}
	if out.RetryTimeout == 0 {
		out.RetryTimeout = 2 * time.Second
	}
	if out.MaximumLagOnFailover == 0 {
		out.MaximumLagOnFailover = 1 << 20
	}
	if out.StartTimeout == 0 {
		out.StartTimeout = time.Minute
	}
	return out
}

func (c *Config) validate() error {
	for name, d := range map[string]time.Duration{"TTL": c.TTL, "LoopWait": c.LoopWait, "RetryTimeout": c.RetryTimeout} {
		if d < time.Second || d%time.Second != 0 {
			return fmt.Errorf("%s must be a whole number of seconds, at least 1s, got %s", name, d)
		}
	}
	if c.TTL < c.LoopWait+2*c.RetryTimeout {
		return fmt.Errorf("TTL (%s) must be at least LoopWait + 2*RetryTimeout (%s)", c.TTL, c.LoopWait+2*c.RetryTimeout)
	}
	if c.SynchronousStrict && !c.Synchronous {
		return fmt.Errorf("SynchronousStrict needs Synchronous")
	}
	if c.MaximumLagOnFailover < 0 {
		return fmt.Errorf("MaximumLagOnFailover must not be negative, got %d", c.MaximumLagOnFailover)
	}
	if c.StartTimeout < 0 {
		return fmt.Errorf("StartTimeout must not be negative, got %s", c.StartTimeout)
	}
	return nil
}
