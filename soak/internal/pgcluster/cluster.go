package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
	"github.com/pgsaga/pgsaga/internal/testkit/pglocal"
)

// dirPrefix starts the name of every cluster directory: pgsaga-pc-<pid>-<random>.
const dirPrefix = "pgsaga-pc-"

// connectTimeoutSeconds is the connect_timeout of the URLs: a frozen node accepts TCP
// connections (the kernel does) and never answers, and pgx gives each host of a multi-host URL
// this long before it tries the next.
const connectTimeoutSeconds = 3

// Cluster is a running Patroni pair. Its methods are safe for concurrent use.
type Cluster struct {
	cfg    *Config
	dir    string
	owner  pglocal.Owner
	binDir string
	logger *slog.Logger

	etcd     *childproc.Process
	etcdPort int
	nodes    []*Node
	guard    *guardian

	sync atomic.Bool // synchronous_mode as last set

	mu     sync.Mutex
	frozen map[*Partition]bool // partitions not healed yet

	stopOnce sync.Once
	stopErr  error
}

// Start creates a new cluster: etcd, then two Patroni nodes, the first of which bootstraps the
// primary while the second makes itself its standby. It returns once WaitHealthy holds. ctx
// bounds startup only: cancelling it later does not stop the cluster; Stop does. On error
// nothing is left behind: no process, no directory.
func Start(ctx context.Context, cfg *Config) (*Cluster, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("error starting the cluster: invalid Config: %w", err)
	}
	if cfg.BaseDir == "" {
		cfg.BaseDir = pglocal.DefaultBaseDir()
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()

	binDir, err := findBinDir(cfg.BinDir)
	if err != nil {
		return nil, fmt.Errorf("error starting the cluster: %w", err)
	}
	for _, prog := range []*string{&cfg.Patroni, &cfg.Etcd} {
		path, err := exec.LookPath(*prog)
		if err != nil {
			return nil, fmt.Errorf("error starting the cluster: %w (Debian: apt-get install patroni etcd-server)", err)
		}
		*prog = path
	}
	owner, err := pglocal.LookupOwner(cfg.RunAsUser)
	if err != nil {
		return nil, fmt.Errorf("error starting the cluster: %w", err)
	}

	// Only a port taken between our probe and a server's bind is tried again.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, cfg, owner, binDir)
		if err == nil {
			return c, nil
		}
		if attempt == attempts || !errors.Is(err, errPortInUse) {
			return nil, err
		}
		cfg.Logger.Info("a port was taken meanwhile; starting again", "error", err)
	}
}

// errPortInUse marks a start that failed because a port was taken.
var errPortInUse = errors.New("port already in use")

func start(ctx context.Context, cfg *Config, owner pglocal.Owner, binDir string) (*Cluster, error) {
	begin := time.Now()
	// Sweeps the directories of dead processes first (Sweep).
	dir, err := childproc.NewDir(cfg.BaseDir, dirPrefix, killOrphanServers, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("error starting the cluster: creating its directory: %w", err)
	}
	guard, err := startGuardian(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("error starting the cluster: %w", err)
	}
	c := &Cluster{cfg: cfg, dir: dir, owner: owner, binDir: binDir, logger: cfg.Logger, guard: guard,
		frozen: map[*Partition]bool{}}
	c.sync.Store(cfg.Synchronous)
	ok := false
	defer func() {
		if !ok {
			c.kill()
			guard.fire() // removes the directory
		}
	}()
	if err := owner.Chown(dir); err != nil {
		return nil, fmt.Errorf("error starting the cluster: %w", err)
	}

	ports, err := freePorts(6)
	if err != nil {
		return nil, fmt.Errorf("error starting the cluster: finding free ports: %w", err)
	}
	c.etcdPort = ports[0]
	for i := range 2 {
		n := &Node{Name: "node" + strconv.Itoa(i), Port: ports[2+2*i], apiPort: ports[3+2*i], dir: filepath.Join(dir, "n"+strconv.Itoa(i))}
		n.API = "http://127.0.0.1:" + strconv.Itoa(n.apiPort)
		// Unix socket paths hold at most 107 bytes.
		if sock := filepath.Join(n.dir, ".s.PGSQL.65535"); len(sock) > 107 {
			return nil, fmt.Errorf("error starting the cluster: socket path %s is longer than 107 bytes: use a shorter Config.BaseDir", sock)
		}
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			return nil, fmt.Errorf("error starting the cluster: %w", err)
		}
		if err := owner.Chown(n.dir); err != nil {
			return nil, fmt.Errorf("error starting the cluster: %w", err)
		}
		if err := c.writePatroniConfig(n); err != nil {
			return nil, fmt.Errorf("error starting the cluster: writing %s's configuration: %w", n.Name, err)
		}
		c.nodes = append(c.nodes, n)
	}

	if err := c.startEtcd(ctx, ports[1]); err != nil {
		return nil, err
	}
	etcdUp := time.Now()
	// node0 first: it bootstraps the primary, and node1 finds the initialize key taken and waits
	// to copy it. Started together they race for the key, which is fine but makes the logs vary.
	for _, n := range c.nodes {
		if err := c.startPatroni(n); err != nil {
			return nil, err
		}
	}
	if _, err := c.WaitForPrimary(ctx, nil); err != nil {
		return nil, c.startError(err)
	}
	primaryUp := time.Now()
	if _, _, err := c.WaitHealthy(ctx); err != nil {
		return nil, c.startError(err)
	}
	ok = true
	cfg.Logger.Info("cluster started", "dir", dir, "url", c.URL("postgres"), "user", owner.Name, "synchronous", cfg.Synchronous,
		"etcd", etcdUp.Sub(begin).Round(time.Millisecond), "primary", primaryUp.Sub(begin).Round(time.Millisecond),
		"total", time.Since(begin).Round(time.Millisecond))
	return c, nil
}

// startError is err with the tail of every log, marked errPortInUse when a server could not bind.
func (c *Cluster) startError(err error) error {
	logs := logTail(filepath.Join(c.dir, "etcd.log"))
	for _, n := range c.nodes {
		logs += "\n" + n.Name + ":\n" + logTail(n.LogPath())
	}
	if strings.Contains(logs, "address already in use") || strings.Contains(logs, "Address already in use") {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return fmt.Errorf("error starting the cluster: %w; logs:\n%s", err, logs)
}

// startEtcd starts a one-member etcd and waits until it answers.
func (c *Cluster) startEtcd(ctx context.Context, peerPort int) error {
	client := "http://127.0.0.1:" + strconv.Itoa(c.etcdPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	dataDir := filepath.Join(c.dir, "etcd")
	cmd := exec.Command(c.cfg.Etcd,
		"--name", "etcd0",
		"--data-dir", dataDir,
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "etcd0="+peer, "--initial-cluster-state", "new",
		"--enable-v2=true", // Patroni speaks the v2 API (see patroniConfig)
		"--logger", "zap", "--log-level", "warn", "--log-outputs", "stderr",
	)
	p, err := c.startChild(cmd, c.dir, filepath.Join(c.dir, "etcd.log"))
	if err != nil {
		return fmt.Errorf("error starting etcd: %w", err)
	}
	c.etcd = p
	for {
		if etcdHealthy(ctx, client) {
			return nil
		}
		select {
		case <-p.Exited():
			return c.startError(fmt.Errorf("etcd exited: %v", p.Err()))
		case <-ctx.Done():
			return c.startError(fmt.Errorf("etcd not healthy: %w", context.Cause(ctx)))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func etcdHealthy(ctx context.Context, client string) bool {
	ctx, cancel := context.WithTimeout(ctx, restTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, client+"/health", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startPatroni starts node n's Patroni; its log (PostgreSQL's too) goes to n.LogPath().
func (c *Cluster) startPatroni(n *Node) error {
	p, err := c.startChild(exec.Command(c.cfg.Patroni, n.configPath()), n.dir, n.LogPath())
	if err != nil {
		return fmt.Errorf("error starting %s's Patroni: %w", n.Name, err)
	}
	n.patroni = p
	return nil
}

// startChild starts cmd (etcd, a Patroni) in dir as the cluster's owner, its output appended to
// logPath, with SIGKILL as its parent-death signal, and tells the guardian to kill its group
// if we die.
func (c *Cluster) startChild(cmd *exec.Cmd, dir, logPath string) (*childproc.Process, error) {
	cmd.Dir = dir
	cmd.Env = childEnv(dir)
	cmd.SysProcAttr = childproc.SysProcAttr(c.owner.Credential(), syscall.SIGKILL)
	p, err := childproc.StartLogged(cmd, logPath)
	if err != nil {
		return nil, err
	}
	if err := c.guard.watch(p.Pid()); err != nil {
		p.KillGroup()
		return nil, fmt.Errorf("telling the guardian: %w", err)
	}
	return p, nil
}

// URL is a multi-host connection URL for database dbname as superuser "postgres": both nodes,
// with target_session_attrs=read-write, so a connection reaches whichever is the primary, and a
// connect_timeout, so a frozen node is given up for the next.
func (c *Cluster) URL(dbname string) string {
	q := url.Values{}
	q.Set("sslmode", "disable")
	q.Set("target_session_attrs", "read-write")
	q.Set("connect_timeout", strconv.Itoa(connectTimeoutSeconds))
	hosts := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		hosts[i] = "127.0.0.1:" + strconv.Itoa(n.Port)
	}
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: strings.Join(hosts, ","), Path: "/" + dbname, RawQuery: q.Encode()}
	return u.String()
}

// Nodes returns both nodes, node0 first.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.nodes...) }

// Dir returns the cluster's directory: etcd's data and log, and one directory per node (its
// Patroni configuration and log, its data directory). Stop removes it.
func (c *Cluster) Dir() string { return c.dir }

// Synchronous reports whether the cluster is in synchronous mode (as Config.Synchronous or
// SetSynchronous last set it).
func (c *Cluster) Synchronous() bool { return c.sync.Load() }

// other returns the node that is not n.
func (c *Cluster) other(n *Node) *Node {
	if c.nodes[0] == n {
		return c.nodes[1]
	}
	return c.nodes[0]
}

// ErrNoPrimary is returned by Primary when no node is the primary now.
var ErrNoPrimary = errors.New("no node is the primary")

// ErrNoStandby is returned by Standby when no node runs as a standby now.
var ErrNoStandby = errors.New("no node is a running standby")

// Primary returns the node that is the primary now, as the nodes' Patroni REST APIs say: it
// holds the leader lock and runs PostgreSQL as the primary. ErrNoPrimary when none does (during
// a failover).
func (c *Cluster) Primary(ctx context.Context) (*Node, error) {
	for _, n := range c.nodes {
		if n.holdsLock(ctx) {
			return n, nil
		}
	}
	return nil, ErrNoPrimary
}

// Standby returns the node whose PostgreSQL runs as a standby now, as its Patroni says.
// ErrNoStandby when none does.
func (c *Cluster) Standby(ctx context.Context) (*Node, error) {
	for _, n := range c.nodes {
		if st, err := n.status(ctx); err == nil && st.replica() {
			return n, nil
		}
	}
	return nil, ErrNoStandby
}

// pollInterval is how often the waits ask the nodes.
const pollInterval = 50 * time.Millisecond

// WaitForPrimary waits until a node other than other (any node when other is nil) is the
// primary and its PostgreSQL accepts a read-write session, and returns it. A failover is over,
// for clients, when it returns.
func (c *Cluster) WaitForPrimary(ctx context.Context, other *Node) (*Node, error) {
	var last error
	for {
		for _, n := range c.nodes {
			if n == other {
				continue
			}
			if !n.holdsLock(ctx) {
				last = fmt.Errorf("%s is not the primary", n.Name)
				continue
			}
			if err := readWrite(ctx, n); err != nil {
				last = err
				continue
			}
			return n, nil
		}
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return nil, fmt.Errorf("error waiting for a primary: %w (last: %v)", err, last)
		}
	}
}

// readWrite checks that n's PostgreSQL accepts a read-write session.
func readWrite(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeoutSeconds*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var ro string
	if err := conn.QueryRow(ctx, "SHOW transaction_read_only").Scan(&ro); err != nil {
		return err
	}
	if ro != "off" {
		return fmt.Errorf("%s is read-only", n.Name)
	}
	return nil
}

// WaitHealthy waits until one node is the primary and the other streams from it as a standby
// (in synchronous mode: as the synchronous standby, named so in etcd, which is what allows
// Patroni to promote it), on the primary's timeline. It returns both. After a failover the old
// primary takes a while to come back as a standby (a rewind, a restart): wait for this before
// the next fault.
func (c *Cluster) WaitHealthy(ctx context.Context) (primary, standby *Node, err error) {
	var last error
	for {
		primary, standby, last = c.healthy(ctx)
		if last == nil {
			return primary, standby, nil
		}
		if err := sleepCtx(ctx, pollInterval); err != nil {
			return nil, nil, fmt.Errorf("error waiting for the cluster to be healthy: %w (last: %v)", err, last)
		}
	}
}

// healthy checks once what WaitHealthy waits for.
func (c *Cluster) healthy(ctx context.Context) (primary, standby *Node, err error) {
	primary, err = c.Primary(ctx)
	if err != nil {
		return nil, nil, err
	}
	standby = c.other(primary)
	pst, err := primary.status(ctx)
	if err != nil {
		return nil, nil, err
	}
	sst, err := standby.status(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !sst.replica() {
		return nil, nil, fmt.Errorf("%s is %s %s, not a running replica", standby.Name, sst.State, sst.Role)
	}
	if sst.Timeline != pst.Timeline {
		return nil, nil, fmt.Errorf("%s is on timeline %d, the primary on %d", standby.Name, sst.Timeline, pst.Timeline)
	}
	streaming := false
	for _, r := range pst.Replication {
		if r.ApplicationName != standby.Name || r.State != "streaming" {
			continue
		}
		if c.sync.Load() && r.SyncState != "sync" {
			return nil, nil, fmt.Errorf("%s streams as %s, not sync", standby.Name, r.SyncState)
		}
		streaming = true
	}
	if !streaming {
		return nil, nil, fmt.Errorf("%s does not stream from %s", standby.Name, primary.Name)
	}
	if c.sync.Load() && !sst.SyncStandby {
		return nil, nil, fmt.Errorf("%s is not yet the synchronous standby in etcd", standby.Name)
	}
	if !c.sync.Load() && sst.SyncStandby {
		return nil, nil, fmt.Errorf("%s is still the synchronous standby in etcd", standby.Name)
	}
	return primary, standby, nil
}

// SetSynchronous turns Patroni's synchronous_mode on or off (PATCH /config, which Patroni keeps
// in etcd and applies on its next loop), then waits until the cluster is healthy in that mode.
func (c *Cluster) SetSynchronous(ctx context.Context, on bool) error {
	patch := map[string]any{"synchronous_mode": on}
	var last error
	for _, n := range c.nodes {
		if _, last = n.rest(ctx, http.MethodPatch, "/config", patch, nil); last == nil {
			break
		}
	}
	if last != nil {
		return fmt.Errorf("error setting synchronous_mode to %v: %w", on, last)
	}
	c.sync.Store(on)
	if _, _, err := c.WaitHealthy(ctx); err != nil {
		return err
	}
	c.logger.Info("synchronous mode set", "synchronous", on)
	return nil
}

// Stop stops every process and removes the cluster's directory. It is idempotent: later calls
// return the first call's result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		begin := time.Now()
		// From here we clean up ourselves: the guardian, released first, cannot signal a process
		// group whose id was reused once ours are gone.
		c.guard.release()
		var errs []error
		if err := c.kill(); err != nil {
			errs = append(errs, err)
		}
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing the cluster directory: %w", err))
		}
		c.logger.Info("cluster stopped", "dir", c.dir, "took", time.Since(begin).Round(time.Millisecond))
		if err := errors.Join(errs...); err != nil {
			c.stopErr = fmt.Errorf("error stopping the cluster: %w", err)
		}
	})
	return c.stopErr
}

// kill ends every process of the cluster: the Patroni nodes first (so none starts PostgreSQL
// again), then each PostgreSQL (an immediate shutdown, which frees its shared memory, resumed
// first if frozen; SIGKILL after 5s), then etcd.
func (c *Cluster) kill() error {
	var errs []error
	for _, n := range c.nodes {
		if n.patroni != nil {
			n.patroni.KillGroup()
		}
	}
	for _, n := range c.nodes {
		pid, ok := postmasterPID(n.dataDir())
		if !ok {
			continue
		}
		procs := append([]int{pid}, children(pid)...)
		gone := func() bool {
			for _, p := range procs {
				if childproc.Alive(p) {
					return false
				}
			}
			return true
		}
		signalAll(procs, syscall.SIGCONT)
		_ = syscall.Kill(pid, syscall.SIGQUIT)
		if !waitFor(5*time.Second, gone) {
			signalAll(procs, syscall.SIGKILL)
			if !waitFor(5*time.Second, gone) {
				errs = append(errs, fmt.Errorf("PostgreSQL of %s (pid %d) survived SIGKILL", n.Name, pid))
			}
		}
	}
	if c.etcd != nil {
		c.etcd.KillGroup()
	}
	c.mu.Lock()
	clear(c.frozen)
	c.mu.Unlock()
	return errors.Join(errs...)
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment ago, drawn below
// the kernel's ephemeral range: a node restarted after a kill binds its port again, and a port
// the kernel may hand to an outgoing connection meanwhile could be taken.
func freePorts(n int) ([]int, error) {
	low, high := 20000, ephemeralStart()
	if high-low < 1000 {
		low, high = 1024, max(high, 2048)
	}
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("no %d free ports in [%d, %d)", n, low, high)
		}
		port := low + rand.IntN(high-low)
		if slices.Contains(ports, port) {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		defer l.Close() // held until all are chosen, so they differ
		ports = append(ports, port)
	}
	return ports, nil
}

// ephemeralStart is the first port of the kernel's ephemeral range (Linux), or 32768.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil || first < 2048 {
		return 32768
	}
	return first
}

// logTail returns the last lines of the file at path, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("\t(cannot read %s: %v)", path, err)
	}
	const maxLines = 25
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return "\t" + strings.Join(lines, "\n\t")
}

// sleepCtx waits d, or less when ctx ends first (then it returns ctx's cause).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// WaitReplayed waits until the standby has replayed everything the primary has written so far,
// so that a read on it sees what was committed. Synchronous replication waits for the standby
// to flush a commit, not to replay it: a database just created may not be there yet, and pgx
// tries no further host of a multi-host URL after "database does not exist" from the first.
func (c *Cluster) WaitReplayed(ctx context.Context) error {
	primary, standby, err := c.WaitHealthy(ctx)
	if err != nil {
		return err
	}
	lsn, err := queryLSN(ctx, primary, "SELECT pg_current_wal_lsn()::text")
	if err != nil {
		return fmt.Errorf("error reading the primary's WAL position: %w", err)
	}
	if err := waitTrue(ctx, standby, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn); err != nil {
		return fmt.Errorf("error waiting for %s to replay up to %s: %w", standby.Name, lsn, err)
	}
	return nil
}

// waitTrue runs query with arg on node n every 10ms until it answers true or ctx ends: a
// standby catching up to a WAL position.
func waitTrue(ctx context.Context, n *Node, query string, arg any) error {
	for {
		var ok bool
		err := queryRow(ctx, n, query, []any{arg}, &ok)
		if err == nil && ok {
			return nil
		}
		if err := sleepCtx(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}
