package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
	"github.com/pgsaga/pgsaga/soak/internal/pgcluster"
)

var (
	listeningLine = regexp.MustCompile(`listening on http://`)
	workerLine    = regexp.MustCompile(`worker: running`)
)

// env is what a run runs on: a throwaway PostgreSQL server or Patroni pair, the migrated
// database, the gateway simulator, two serve and two worker processes of the real pgsaga binary.
type env struct {
	cfg *Config
	dir string
	bin string
	tl  *timeline

	// single is the server of ClusterSingle; pair the Patroni pair of the other modes.
	single *pglocal.Cluster
	pair   *pgcluster.Cluster
	// dbURL is what every process connects with: on a pair, a multi-host URL with
	// target_session_attrs=read-write.
	dbURL string
	// db is held while the database is paused, restarted or failed over, so those do not
	// overlap.
	db sync.Mutex

	sim       *daemon
	simURL    string
	serves    []*daemon
	serveURLs []string
	workers   []*daemon
}

// startEnv builds (or takes) the binary, starts the cluster, migrates it and starts the
// simulator, the serves and the workers. On error what was started is stopped again.
func startEnv(ctx context.Context, cfg *Config, dir string, tl *timeline) (_ *env, err error) {
	e := &env{cfg: cfg, dir: dir, tl: tl, bin: cfg.Bin}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	if e.bin == "" {
		if e.bin, err = buildPgsaga(ctx, dir); err != nil {
			return nil, err
		}
		tl.add("built %s", e.bin)
	}

	if err := e.startDatabase(ctx); err != nil {
		return nil, err
	}
	if out, err := e.cli(ctx, "migrate"); err != nil {
		return nil, fmt.Errorf("error migrating: %w: %s", err, out)
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid())))
	simAddr, err := freeAddr(rng)
	if err != nil {
		return nil, err
	}
	e.simURL = "http://" + simAddr
	sf := cfg.Sim
	simArgs := []string{"gateway-sim", "--addr", simAddr, "--idempotency=" + strconv.FormatBool(sf.Idempotency == "on"), "--inquiry=true",
		"--pending", probability(sf.Pending), "--pending-for", sf.PendingFor.String(),
		"--latency", orNone(sf.Latency).String(), "--latency-jitter", orNone(sf.LatencyJitter).String(),
		"--latency-before", orNone(sf.LatencyBefore).String(),
		"--lose-response", probability(sf.LoseResponse), "--fail-before", probability(sf.FailBefore),
		"--seed", strconv.FormatUint(cfg.Seed, 10)}
	if e.sim, err = e.newDaemon(ctx, "gateway-sim", simArgs, listeningLine); err != nil {
		return nil, err
	}

	for i := range 2 {
		addr, err := freeAddr(rng)
		if err != nil {
			return nil, err
		}
		d, err := e.newDaemon(ctx, fmt.Sprintf("serve-%d", i+1), []string{"serve", "--addr", addr, "--ops-addr", "127.0.0.1:0",
			"--gateway-url", e.simURL, "--lease", cfg.Lease.String(), "--log-level", "info"}, listeningLine)
		if err != nil {
			return nil, err
		}
		e.serves, e.serveURLs = append(e.serves, d), append(e.serveURLs, "http://"+addr)
	}
	for i := range 2 {
		d, err := e.newDaemon(ctx, fmt.Sprintf("worker-%d", i+1), []string{"worker", "--gateway-url", e.simURL,
			"--lease", cfg.Lease.String(), "--sweep-interval", cfg.SweepInterval.String(), "--log-level", "info"}, workerLine)
		if err != nil {
			return nil, err
		}
		e.workers = append(e.workers, d)
	}
	return e, nil
}

// patroniTTL is the leader lock's TTL of a run's Patroni pair: a partitioned primary is
// replaced this long after it froze, and a database pause must be shorter.
const patroniTTL = 5 * time.Second

// startDatabase starts the run's PostgreSQL: one server, or a Patroni pair.
func (e *env) startDatabase(ctx context.Context) error {
	if !e.cfg.patroni() {
		var err error
		if e.single, err = pglocal.Start(ctx, &pglocal.Config{Launch: pglocal.Launch{StartTimeout: 2 * time.Minute}}); err != nil {
			return err
		}
		e.dbURL = e.single.URL("postgres")
		e.tl.add("postgres started in %s", e.single.Dir())
		return nil
	}
	begin := time.Now()
	var err error
	e.pair, err = pgcluster.Start(ctx, &pgcluster.Config{
		Synchronous:  e.cfg.Cluster == ClusterPatroniSync,
		TTL:          patroniTTL,
		StartTimeout: 3 * time.Minute,
		Logger:       slog.New(slog.NewTextHandler(&timelineWriter{tl: e.tl, prefix: "patroni: "}, nil)),
	})
	if err != nil {
		return err
	}
	e.dbURL = e.pair.URL("postgres")
	e.tl.add("patroni pair (%s) started in %s after %s", e.cfg.Cluster, e.pair.Dir(), time.Since(begin).Round(time.Millisecond))
	return nil
}

// newDaemon creates a daemon and starts it.
func (e *env) newDaemon(ctx context.Context, name string, args []string, ready *regexp.Regexp) (*daemon, error) {
	d, err := newDaemon(e.dir, name, e.bin, args, []string{"DATABASE_URL=" + e.dbURL}, ready, e.tl)
	if err != nil {
		return nil, err
	}
	d.op.Lock()
	defer d.op.Unlock()
	if err := d.start(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// daemons are the processes the faults act on (the simulator holds the ledger: it stays up).
func (e *env) daemons() []*daemon {
	return append(append([]*daemon(nil), e.serves...), e.workers...)
}

// ensureUp waits until a pair is healthy again and starts every process that is not running.
func (e *env) ensureUp(ctx context.Context) error {
	var errs []error
	if e.pair != nil {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if _, _, err := e.pair.WaitHealthy(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range append(e.daemons(), e.sim) {
		if err := d.ensure(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setSimFaults changes the simulator's settings at run time (POST /_sim/faults).
func (e *env) setSimFaults(ctx context.Context, doc string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.simURL+"/_sim/faults", strings.NewReader(doc))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("error setting the simulator's faults %s: %w", doc, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("error setting the simulator's faults %s: status %d", doc, resp.StatusCode)
	}
	return nil
}

// cli runs one pgsaga command (migrate, keys, show, settle, resume) on the run's database and
// returns its stdout; on failure the error carries its stderr.
func (e *env) cli(ctx context.Context, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+e.dbURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("pgsaga %s: %w: %s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// apiKeys creates an API key for each of n clients (its tenant and actor) with `pgsaga apikey
// create`, and returns their secrets by client.
func (e *env) apiKeys(ctx context.Context, n int) (map[scope]string, error) {
	keys := make(map[scope]string, n)
	for i := range n {
		c := clientOf(i)
		out, err := e.cli(ctx, "apikey", "create", "--json", "--tenant", c.Tenant, "--actor", c.Actor)
		if err != nil {
			return nil, err
		}
		var k struct{ Secret string }
		if err := json.Unmarshal(out, &k); err != nil || k.Secret == "" {
			return nil, fmt.Errorf("pgsaga apikey create printed no secret (%v): %s", err, out)
		}
		keys[c] = k.Secret
	}
	return keys, nil
}

// close stops every process and the cluster, and removes the cluster's directory.
func (e *env) close() {
	for _, d := range e.daemons() {
		d.stop(10 * time.Second)
	}
	if e.sim != nil {
		e.sim.stop(5 * time.Second)
	}
	if e.single != nil {
		e.resumePostgres() // a stopped server cannot shut down
		if err := e.single.Stop(); err != nil {
			e.tl.add("error stopping postgres: %v", err)
		}
	}
	if e.pair != nil {
		if err := e.pair.Stop(); err != nil {
			e.tl.add("error stopping the patroni pair: %v", err)
		}
	}
	for _, d := range append(e.daemons(), e.sim) {
		if d != nil {
			_ = d.log.Close()
		}
	}
}

// buildPgsaga builds the pgsaga command (module cmd) into dir with the go tool.
func buildPgsaga(ctx context.Context, dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the harness builds the pgsaga command with the go tool (or give -bin): %w", err)
	}
	bin := filepath.Join(dir, "pgsaga")
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, "github.com/pgsaga/pgsaga/cmd/pgsaga").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("error building pgsaga: %w: %s", err, out)
	}
	return bin, nil
}

// freeAddr returns a loopback address with a port free now, so a process restarted by a fault
// comes back at the same address. The port is below the kernel's ephemeral range: a port from
// that range, free while its serve is down, could be taken meanwhile by an outgoing connection
// (to PostgreSQL, say), and the serve could not listen again.
func freeAddr(rng *rand.Rand) (string, error) {
	low := ephemeralLow()
	for range 100 {
		port := 10000 + rng.IntN(low-10000)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		return addr, nil
	}
	return "", errors.New("error finding a free port below the ephemeral range: 100 tries")
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's default when it
// cannot be read).
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 10000+100 {
		return linuxDefault
	}
	return low
}

// probability is a fault probability as a flag value; negative means never.
func probability(p float64) string { return strconv.FormatFloat(max(p, 0), 'g', -1, 64) }

// orNone is a fault duration as a flag value; negative means none.
func orNone(d time.Duration) time.Duration { return max(d, 0) }
