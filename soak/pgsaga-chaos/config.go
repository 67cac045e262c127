package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"
)

// Config shapes one chaos run. The zero value, given its defaults, is the long soak's setting.
type Config struct {
	// Duration is how long clients submit intents and faults are injected; the drain and the
	// checks come after it. Defaults to 5m.
	Duration time.Duration
	// Clients is how many client goroutines submit intents at once, each an invoice and then
	// one to three payments on it, concurrently. Defaults to 12.
	Clients int
	// DoubleClick is the probability that a payment intent is submitted twice at once (same
	// key, same body), as a user's double click. Defaults to 0.1; negative: never.
	DoubleClick float64
	// SharedKeys is the probability that an intent takes the idempotency key another client (an
	// actor of its own, half of them in a second tenant) used lately instead of a new one: the
	// same key string in two scopes is two keys, and neither may be answered with the other's
	// response. Defaults to 0.05; negative: never.
	SharedKeys float64

	// Lease is the --lease of every serve and worker. Defaults to 2s.
	Lease time.Duration
	// SweepInterval is the workers' --sweep-interval. Defaults to 250ms.
	SweepInterval time.Duration

	// Cluster is the database the processes run on: ClusterSingle (one throwaway PostgreSQL,
	// paused and restarted), ClusterPatroniSync or ClusterPatroniAsync (a Patroni pair with
	// synchronous or asynchronous replication, reached through a multi-host URL, failed over
	// every FailoverEvery). The run is judged by the claim its database can keep: the whole
	// promise on one server and on a synchronous pair, the money claim on an asynchronous one.
	// Defaults to ClusterSingle.
	Cluster string
	// FailoverEvery is the mean time between two failovers of a Patroni pair, each wait drawn
	// uniformly from half to one and a half of it, counted from the moment the pair is healthy
	// again after the last one. Failovers take turns in a shuffled order: kill -9 of the
	// primary's postmaster, a partition of the primary (frozen past the leader lock's TTL),
	// a switchover, and, asynchronous only, a lossy failover. Defaults to 30s.
	FailoverEvery time.Duration
	// LossWindow is how long a lossy failover (ClusterPatroniAsync) lets the primary acknowledge
	// the clients' commits while nothing reaches its standby, before it dies: what the clients
	// were told in that window is lost with it. The window goes on, by as much again up to ten
	// times, until a client got a new 201 in it. Defaults to 1s.
	LossWindow time.Duration

	// FaultEvery is the mean time between two faults; each wait is drawn uniformly from half to
	// one and a half of it. Faults take turns in a shuffled order, so each kind comes up once in
	// every six. Defaults to 1.5s.
	FaultEvery time.Duration
	// PauseFor is how long a database pause (SIGSTOP of every PostgreSQL process; on a Patroni
	// pair, of the primary node, shorter than the leader lock's TTL, so no failover) and a zombie
	// (SIGSTOP of a serve or a worker) last. Defaults to nine tenths of Lease.
	PauseFor time.Duration
	// DBRestarts is how many full PostgreSQL restarts (fast shutdown, then start) happen,
	// evenly spaced over Duration, on a single server (a Patroni pair's failovers take their
	// place). Defaults to 1, in the middle of the run; negative: none.
	DBRestarts int
	// DBDown is how long PostgreSQL stays down in a restart. Defaults to 1s.
	DBDown time.Duration
	// InquiryOff is how long the gateway's inquiry is down when that fault comes up (POST
	// /_sim/faults {"inquiry": false}, then true again): a charge whose outcome an earlier
	// attempt left unknown cannot be resolved meanwhile, so its key parks with outcome_unknown
	// for the operator to settle. The simulator says meanwhile that it has no inquiry: without
	// keys too, a provider that can neither be asked nor tell a repeated charge by its key, and
	// after a failover lost a key's commits nothing then tells a re-execution from a first one:
	// its charge goes out a second time. So an asynchronous pair whose simulator honours no keys
	// has no such outage unless one is asked for. Defaults to 1.5s (none on ClusterPatroniAsync
	// with Sim.Idempotency off); negative: never.
	InquiryOff time.Duration

	// Sim is the gateway simulator's settings and faults. Its inquiry is always on.
	Sim SimFaults

	// WorkerDrain is how long, after the run, only the workers finish the started keys before
	// the clients retry the intents they got no answer for. River rescues the job of a worker
	// killed mid-resume only after a minute plus the lease, so a shorter wait leaves those keys
	// to the clients' retries. Defaults to 90s.
	WorkerDrain time.Duration
	// DrainTimeout bounds the whole drain: no key may still be started after it. Defaults to
	// 4m.
	DrainTimeout time.Duration

	// Bin is a pgsaga binary to run. Defaults to building ./cmd/pgsaga with the go tool.
	Bin string
	// Dir receives the processes' logs, the timeline and the evidence of any violation; it is
	// kept. Defaults to a new temporary directory, removed after a run without violations.
	Dir string
	// Seed drives the clients' and the fault schedule's choices (and the simulator's). Defaults
	// to one drawn from the clock, printed in the summary.
	Seed uint64
	// Progress receives one line per notable event while the run goes on. Defaults to
	// discarding them.
	Progress io.Writer
}

// The databases a run can use (Config.Cluster).
const (
	ClusterSingle       = "single"
	ClusterPatroniSync  = "patroni-sync"
	ClusterPatroniAsync = "patroni-async"
)

// SimFaults are the gateway simulator's settings and fault flags. A negative value turns a
// fault off (zero means its default).
type SimFaults struct {
	// Idempotency is whether the simulator honours idempotency keys, "on" or "off". Off, every
	// charge sent is a charge, and only inquiry can tell what an earlier attempt did: the
	// engine asks before it sends again. On an asynchronous pair that is not enough: an
	// execution that ran on the old primary may still send until its lease runs out, and its
	// request land the provider's in-flight window later, after a re-execution on the new
	// primary found nothing (a failover faster than that is not covered); a provider with keys
	// answers the re-execution with the first charge whatever the timing. Defaults to "off",
	// "on" on ClusterPatroniAsync.
	Idempotency string
	// Pending is the probability that a charge is created pending. Defaults to 0.15.
	Pending float64
	// PendingFor is how long a pending charge stays pending. Defaults to 2s.
	PendingFor time.Duration
	// Latency delays every charge answer after the charge is made. Defaults to 20ms.
	Latency time.Duration
	// LatencyJitter adds a uniform 0..N to Latency and to LatencyBefore. Defaults to 150ms.
	LatencyJitter time.Duration
	// LatencyBefore holds every charge request this long before it lands, so a request may
	// land after its sender gave up. Defaults to 200ms.
	LatencyBefore time.Duration
	// LoseResponse is the probability that a charge is made and its answer lost. Defaults to
	// 0.05.
	LoseResponse float64
	// FailBefore is the probability of a 503 that charged nothing. Defaults to 0.05.
	FailBefore float64
}

// WithDefaults returns a copy of c (which may be nil) with every unset field given its default.
func (c *Config) WithDefaults() *Config {
	out := &Config{}
	if c != nil {
		*out = *c
	}
	setDefault(&out.Duration, 5*time.Minute)
	setDefault(&out.Clients, 12)
	setDefault(&out.DoubleClick, 0.1)
	setDefault(&out.SharedKeys, 0.05)
	setDefault(&out.Cluster, ClusterSingle)
	setDefault(&out.FailoverEvery, 30*time.Second)
	setDefault(&out.LossWindow, time.Second)
	setDefault(&out.Lease, 2*time.Second)
	setDefault(&out.SweepInterval, 250*time.Millisecond)
	setDefault(&out.FaultEvery, 1500*time.Millisecond)
	setDefault(&out.PauseFor, out.Lease*9/10)
	setDefault(&out.DBRestarts, 1)
	setDefault(&out.DBDown, time.Second)
	if out.Cluster == ClusterPatroniAsync {
		setDefault(&out.Sim.Idempotency, "on")
	}
	setDefault(&out.Sim.Idempotency, "off")
	if out.Cluster == ClusterPatroniAsync && out.Sim.Idempotency == "off" {
		setDefault(&out.InquiryOff, -1)
	}
	setDefault(&out.InquiryOff, 1500*time.Millisecond)
	setDefault(&out.Sim.Pending, 0.15)
	setDefault(&out.Sim.PendingFor, 2*time.Second)
	setDefault(&out.Sim.Latency, 20*time.Millisecond)
	setDefault(&out.Sim.LatencyJitter, 150*time.Millisecond)
	setDefault(&out.Sim.LatencyBefore, 200*time.Millisecond)
	setDefault(&out.Sim.LoseResponse, 0.05)
	setDefault(&out.Sim.FailBefore, 0.05)
	setDefault(&out.WorkerDrain, 90*time.Second)
	setDefault(&out.DrainTimeout, 4*time.Minute)
	if out.Seed == 0 {
		out.Seed = uint64(time.Now().UnixNano())
	}
	if out.Progress == nil {
		out.Progress = io.Discard
	}
	return out
}

// claim is the promise the run is judged by: the money claim on an asynchronous pair, whose
// failovers may lose acknowledged commits; the whole promise otherwise.
func (c *Config) claim() claim {
	if c.Cluster == ClusterPatroniAsync {
		return claimMoney
	}
	return claimExact
}

// patroni reports whether the run uses a Patroni pair.
func (c *Config) patroni() bool {
	return c.Cluster == ClusterPatroniSync || c.Cluster == ClusterPatroniAsync
}

func setDefault[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}

func (c *Config) validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Duration > 0, "Duration must be positive, got %s", c.Duration)
	check(c.Cluster == ClusterSingle || c.patroni(), "Cluster must be %s, %s or %s, got %q", ClusterSingle, ClusterPatroniSync, ClusterPatroniAsync, c.Cluster)
	check(c.FailoverEvery > 0, "FailoverEvery must be positive, got %s", c.FailoverEvery)
	check(c.Sim.Idempotency == "on" || c.Sim.Idempotency == "off", "Sim.Idempotency must be on or off, got %q", c.Sim.Idempotency)
	check(c.LossWindow > 0, "LossWindow must be positive, got %s", c.LossWindow)
	check(c.Clients > 0, "Clients must be positive, got %d", c.Clients)
	check(c.Lease >= time.Second, "Lease must be at least 1s (pgsaga's minimum), got %s", c.Lease)
	check(c.PauseFor > 0 && c.PauseFor < c.Lease, "PauseFor must be positive and shorter than Lease (%s), got %s", c.Lease, c.PauseFor)
	check(!c.patroni() || c.PauseFor < patroniTTL, "PauseFor must be shorter than the Patroni leader lock's TTL (%s), or a pause is a failover, got %s", patroniTTL, c.PauseFor)
	check(c.WorkerDrain >= 0 && c.WorkerDrain < c.DrainTimeout, "WorkerDrain must be in [0, DrainTimeout (%s)), got %s", c.DrainTimeout, c.WorkerDrain)
	for name, p := range map[string]float64{"DoubleClick": c.DoubleClick, "SharedKeys": c.SharedKeys, "Sim.Pending": c.Sim.Pending,
		"Sim.LoseResponse": c.Sim.LoseResponse, "Sim.FailBefore": c.Sim.FailBefore} {
		check(p <= 1, "%s must be a probability (at most 1; negative: never), got %v", name, p)
	}
	return errors.Join(errs...)
}

// bindFlags binds c's fields to command-line flags of fs; flags left unset keep c's zero values
// (their defaults come from WithDefaults).
func (c *Config) bindFlags(fs *flag.FlagSet) {
	d := (&Config{}).WithDefaults()
	fs.DurationVar(&c.Duration, "duration", d.Duration, "how long clients submit and faults are injected")
	fs.IntVar(&c.Clients, "clients", d.Clients, "client goroutines submitting intents at once")
	fs.Float64Var(&c.DoubleClick, "double-click", d.DoubleClick, "probability that a payment is submitted twice at once")
	fs.Float64Var(&c.SharedKeys, "shared-keys", d.SharedKeys, "probability that an intent takes the key another client used lately (negative: never)")
	fs.DurationVar(&c.Lease, "lease", d.Lease, "--lease of every serve and worker")
	fs.DurationVar(&c.SweepInterval, "sweep-interval", d.SweepInterval, "--sweep-interval of the workers")
	fs.StringVar(&c.Cluster, "cluster", d.Cluster, "database: single, patroni-sync or patroni-async (a Patroni pair, failed over among the faults)")
	fs.DurationVar(&c.FailoverEvery, "failover-every", d.FailoverEvery, "mean time between two failovers of a Patroni pair, from the last one's end")
	fs.DurationVar(&c.LossWindow, "loss-window", d.LossWindow, "how long a lossy failover (patroni-async) lets the primary acknowledge what its standby never gets")
	fs.DurationVar(&c.FaultEvery, "fault-every", d.FaultEvery, "mean time between two faults")
	fs.DurationVar(&c.PauseFor, "pause-for", 0, "length of a database pause or a zombie (default: 0.9 x --lease)")
	fs.IntVar(&c.DBRestarts, "db-restarts", d.DBRestarts, "full PostgreSQL restarts, evenly spaced")
	fs.DurationVar(&c.DBDown, "db-down", d.DBDown, "how long PostgreSQL stays down in a restart")
	fs.DurationVar(&c.InquiryOff, "inquiry-off", 0, "how long the gateway's inquiry is down when that fault comes up (default: 1.5s, none on patroni-async without keys; negative: never)")
	fs.StringVar(&c.Sim.Idempotency, "sim-idempotency", "", "gateway-sim --idempotency: on or off (default: off, on with -cluster patroni-async)")
	fs.Float64Var(&c.Sim.Pending, "sim-pending", d.Sim.Pending, "gateway-sim --pending")
	fs.DurationVar(&c.Sim.PendingFor, "sim-pending-for", d.Sim.PendingFor, "gateway-sim --pending-for")
	fs.DurationVar(&c.Sim.Latency, "sim-latency", d.Sim.Latency, "gateway-sim --latency")
	fs.DurationVar(&c.Sim.LatencyJitter, "sim-latency-jitter", d.Sim.LatencyJitter, "gateway-sim --latency-jitter")
	fs.DurationVar(&c.Sim.LatencyBefore, "sim-latency-before", d.Sim.LatencyBefore, "gateway-sim --latency-before")
	fs.Float64Var(&c.Sim.LoseResponse, "sim-lose-response", d.Sim.LoseResponse, "gateway-sim --lose-response")
	fs.Float64Var(&c.Sim.FailBefore, "sim-fail-before", d.Sim.FailBefore, "gateway-sim --fail-before")
	fs.DurationVar(&c.WorkerDrain, "worker-drain", d.WorkerDrain, "after the run, how long only the workers finish started keys")
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", d.DrainTimeout, "bound of the whole drain")
	fs.StringVar(&c.Bin, "bin", "", "pgsaga binary to run (default: go build ./cmd/pgsaga)")
	fs.StringVar(&c.Dir, "dir", "", "directory for logs, timeline and evidence (default: a temporary one, removed after a clean run)")
	fs.Uint64Var(&c.Seed, "seed", 0, "seed of the clients', the faults' and the simulator's choices (default: from the clock)")
}
