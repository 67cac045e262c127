package failover

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/soak/internal/pgcluster"
)

// daemon is a running pgsaga serve or worker.
type daemon struct {
	cmd    *exec.Cmd
	url    string
	ops    string // serve's operations address, from its "metrics and health on" line
	done   chan struct{}
	stderr *bytes.Buffer
	mu     *sync.Mutex
}

var (
	listening = regexp.MustCompile(`listening on (http://\S+)`)
	opsLine   = regexp.MustCompile(`metrics and health on (http://\S+)`)
)

// startDaemon runs the pgsaga binary with args until the test ends, and waits for its
// "listening on" line when wantURL.
func startDaemon(t *testing.T, wantURL bool, args ...string) *daemon {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	d := &daemon{cmd: cmd, done: make(chan struct{}), stderr: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stderr = lockedWriter{d.mu, d.stderr}
	require.NoError(t, cmd.Start())
	urls, opss := make(chan string, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := opsLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case opss <- m[1]:
				default:
				}
			}
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("pgsaga %s stderr (last lines):\n%s", args[0], tail(d.log(), 40))
		}
	})
	if wantURL {
		select {
		case d.url = <-urls:
			select { // printed before the listening line
			case d.ops = <-opss:
			default:
			}
		case <-d.done:
			t.Fatalf("pgsaga %s exited: %s", args[0], d.log())
		case <-time.After(60 * time.Second):
			t.Fatalf("pgsaga %s did not say where it listens", args[0])
		}
	}
	return d
}

func (d *daemon) log() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return bytes.Clone(d.stderr.Bytes())
}

func (d *daemon) running() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and returns the exit code.
func (d *daemon) stop(t *testing.T) int {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-d.done:
	case <-time.After(30 * time.Second):
		t.Fatal("did not stop within 30s of SIGTERM")
	}
	return d.cmd.ProcessState.ExitCode()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// intent is one request a client means to make once: one key, one body, sent until it gets a
// definite answer. answers are every definite answer it got (2xx, or 4xx but 409 in progress).
type intent struct {
	key, path, body string
	mu              sync.Mutex
	answers         []*answer
	statuses        map[int]int // every status seen, definite or not
	// bad503 are the 503s that were not temporarily_unavailable with a Retry-After (a parked key,
	// an answer without a hint).
	bad503 []*answer
	// tries is every attempt, when it was answered and how, for a failure's message.
	tries []string
}

// history is the intent's attempts, one a line.
func (in *intent) history() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return fmt.Sprintf("%s %s %s\n  %s", in.path, in.key, in.body, strings.Join(in.tries, "\n  "))
}

func (in *intent) final() *answer {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.answers) == 0 {
		return nil
	}
	return in.answers[len(in.answers)-1]
}

// load is clients paying invoices through serve while the test fails the cluster over.
type load struct {
	t       *testing.T
	api     string
	mu      sync.Mutex
	intents []*intent
	settled atomic.Int64 // intents with a definite answer
	times   []time.Time  // when each definite answer came, under mu
	stop    chan struct{}
	wg      sync.WaitGroup
}

// send sends in until it gets a definite answer, retrying with the same key after a 503, a 409
// or a network error, as a client that follows Retry-After (capped, to keep the test short)
// does. It gives up only when the test's context ends.
func (l *load) send(ctx context.Context, in *intent) *answer {
	l.mu.Lock()
	l.intents = append(l.intents, in)
	l.mu.Unlock()
	for {
		a, err := post(l.api, in.path, in.key, in.body)
		wait := 200 * time.Millisecond
		at := time.Now().UTC().Format("15:04:05.000")
		if err != nil {
			in.mu.Lock()
			in.tries = append(in.tries, at+" "+err.Error())
			in.mu.Unlock()
		}
		if err == nil {
			in.mu.Lock()
			in.statuses[a.status]++
			in.tries = append(in.tries, fmt.Sprintf("%s %d replayed=%q %s", at, a.status, a.header.Get("Idempotent-Replayed"), a.body))
			in.mu.Unlock()
			switch {
			case a.status < 300 || (a.status >= 400 && a.status < 500 && a.status != http.StatusConflict):
				in.mu.Lock()
				in.answers = append(in.answers, a)
				in.mu.Unlock()
				l.mu.Lock()
				l.times = append(l.times, time.Now())
				l.mu.Unlock()
				l.settled.Add(1)
				return a
			case a.header.Get("Retry-After") != "":
				if s, err := strconv.Atoi(a.header.Get("Retry-After")); err == nil {
					wait = min(time.Duration(s)*time.Second, 500*time.Millisecond)
				}
			}
			if a.status == http.StatusServiceUnavailable {
				var e struct{ Error string }
				if json.Unmarshal(a.body, &e) != nil || e.Error != "temporarily_unavailable" || a.header.Get("Retry-After") == "" {
					in.mu.Lock()
					in.bad503 = append(in.bad503, a)
					in.mu.Unlock()
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// client creates an invoice, pays it in three parts, and starts over, until stop is closed; an
// intent begun is always followed to its answer. It thinks 30-70ms between intents: a little
// load, which the machine's two cores share with Patroni and both PostgreSQL servers.
func (l *load) client(ctx context.Context) {
	defer l.wg.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-time.After(time.Duration(30+rand.IntN(40)) * time.Millisecond):
		}
		inv := &intent{key: uuid.NewString(), path: "/invoices", body: `{"amount": 3000, "currency": "USD"}`, statuses: map[int]int{}}
		a := l.send(ctx, inv)
		if a == nil {
			return
		}
		var created struct{ ID string }
		if json.Unmarshal(a.body, &created) != nil || created.ID == "" {
			continue // checked at the end: every invoice answer must be a 201
		}
		for range 3 {
			pay := &intent{key: uuid.NewString(), path: "/payments", statuses: map[int]int{},
				body: `{"invoice_id": "` + created.ID + `", "amount": 1000}`}
			if l.send(ctx, pay) == nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(30+rand.IntN(40)) * time.Millisecond):
			}
		}
	}
}

// waitSettled waits until n more intents than now have a definite answer.
func (l *load) waitSettled(n int64, timeout time.Duration) {
	l.t.Helper()
	target := l.settled.Load() + n
	waitUntil(l.t, timeout, fmt.Sprintf("%d more answers", n), func() bool { return l.settled.Load() >= target })
}

// The real pgsaga serve and worker, given the cluster's multi-host URL, ride out a kill -9 of the
// primary's postmaster, a partition of the primary (longer than the leader lock's TTL) and a
// switchover, with clients paying invoices all along. After each fault the standby is promoted;
// during the failovers requests answer 503 temporarily_unavailable with Retry-After (or 409
// while a key's execution is in flight), never anything else; at the end every intent has its
// answer (retried to completion), every answer any client got replays byte for byte, the
// gateway charged every payment once (its ledger by reference), every key is completed, and
// neither process exited.
func TestServeRidesOutFailovers(t *testing.T) {
	healthyIn(t, true)
	url, pool := newDatabase(t)
	s := sim.New(nil)
	gw := httptest.NewServer(s.Handler())
	t.Cleanup(gw.Close)
	lease := "5s" // keys of a request that died with the old primary are resumed this soon
	// A test of failovers, not of authentication: the scope comes from the headers, on loopback.
	serve := startDaemon(t, true, "serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--insecure-scope-headers",
		"--database-url", url, "--gateway-url", gw.URL, "--lease", lease)
	worker := startDaemon(t, true, "worker", "--database-url", url, "--gateway-url", gw.URL, "--lease", lease,
		"--sweep-interval", "200ms", "--metrics-addr", "127.0.0.1:0")

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	l := &load{t: t, api: serve.url, stop: make(chan struct{})}
	const clients = 4
	for range clients {
		l.wg.Add(1)
		go l.client(ctx)
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(l.stop)
			l.wg.Wait()
		}
	}
	defer stopLoad()
	l.waitSettled(12, time.Minute)

	// Each fault returns the old primary once the standby has been promoted; a partitioned node
	// is healed after that.
	var part *pgcluster.Partition
	faults := []struct {
		name   string
		inject func() (*pgcluster.Node, error)
	}{
		{"kill -9 of the primary's postmaster", func() (*pgcluster.Node, error) {
			old, err := cluster.KillPrimary(ctx)
			if err != nil {
				return nil, err
			}
			_, err = cluster.WaitForPrimary(ctx, old)
			return old, err
		}},
		{"partition of the primary", func() (*pgcluster.Node, error) {
			p, err := cluster.PartitionPrimary(ctx)
			if err != nil {
				return nil, err
			}
			part = p
			t.Cleanup(func() { _ = p.Heal() })
			_, err = cluster.WaitForPrimary(ctx, p.Node)
			return p.Node, err
		}},
		{"switchover", func() (*pgcluster.Node, error) {
			old, err := cluster.Primary(ctx)
			if err != nil {
				return nil, err
			}
			_, err = cluster.Switchover(ctx)
			return old, err
		}},
	}
	for _, f := range faults {
		begin := time.Now()
		old, err := f.inject()
		require.NoError(t, err, f.name)
		promoted := time.Since(begin)
		if part != nil {
			require.NoError(t, part.Heal())
			part = nil
		}
		primary, standby, err := cluster.WaitHealthy(ctx)
		require.NoError(t, err)
		require.NotEqual(t, old, primary, "%s: the standby was promoted", f.name)
		require.Equal(t, old, standby, "%s: the old primary is the standby again", f.name)
		t.Logf("%s: %s promoted after %s, healthy again after %s; %d answers so far", f.name, primary,
			promoted.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond), l.settled.Load())
		l.waitSettled(12, time.Minute) // the service answers again, through the new primary
	}
	stopLoad()
	t.Logf("the longest the clients went without an answer: %s", l.longestGap().Round(time.Millisecond))

	// Every intent has its answer; no answer was a server error.
	var payments, settledPayments int
	for _, in := range l.intents {
		final := in.final()
		require.NotNil(t, final, "intent %s %s got no answer", in.path, in.key)
		require.Equal(t, http.StatusCreated, final.status, "%s\nthe invoice's intents:\n%s\nin the database now: %s",
			in.history(), l.invoiceHistory(in), storedFacts(pool, in))
		for status := range in.statuses {
			require.Contains(t, []int{http.StatusCreated, http.StatusConflict, http.StatusServiceUnavailable}, status,
				"%s %s was answered %d", in.path, in.key, status)
		}
		require.Empty(t, in.bad503, "%s %s: a 503 that is not temporarily_unavailable with Retry-After", in.path, in.key)
		if in.path == "/payments" {
			payments++
		}
	}
	// Every answer replays byte for byte.
	for _, in := range l.intents {
		again, err := post(serve.url, in.path, in.key, in.body)
		require.NoError(t, err)
		require.Equal(t, "true", again.header.Get("Idempotent-Replayed"), "%s %s: %s", in.path, in.key, again)
		in.mu.Lock()
		for _, a := range in.answers {
			require.Equal(t, a.status, again.status, "%s %s", in.path, in.key)
			require.Equal(t, string(a.body), string(again.body), "%s %s replays byte for byte", in.path, in.key)
		}
		in.mu.Unlock()
		if in.path == "/payments" {
			var p struct {
				ID       string `json:"id"`
				ChargeID string `json:"charge_id"`
				Status   string `json:"status"`
			}
			require.NoError(t, json.Unmarshal(again.body, &p))
			require.Equal(t, "succeeded", p.Status)
			require.Equal(t, 1, s.ChargesFor("payment:"+p.ID), "payment %s charged once", p.ID)
			c, ok := s.Get(p.ChargeID)
			require.True(t, ok, "the charge %s of payment %s is at the gateway", p.ChargeID, p.ID)
			require.Equal(t, "payment:"+p.ID, c.Reference)
			settledPayments++
		}
	}
	// No double charge anywhere: the ledger holds one charge per payment intent, no more.
	ledger := s.Ledger()
	for ref, n := range ledger.ByReference {
		require.Equal(t, 1, n, "reference %s charged %d times", ref, n)
	}
	require.Len(t, ledger.Charges, payments, "one charge per payment intent")
	require.Equal(t, payments, settledPayments)
	requireAllCompleted(t, pool, len(l.intents))
	t.Logf("%d intents (%d payments) across three failovers; statuses seen: %v", len(l.intents), payments, statusCounts(l.intents))

	status := get(t, serve.ops+"/healthz")
	require.Equal(t, http.StatusOK, status.status, status.String())
	require.True(t, serve.running() && worker.running(), "serve and worker are still running")
	require.Equal(t, 0, serve.stop(t))
	require.Equal(t, 0, worker.stop(t))
}

// storedFacts says what the database holds of in's key and of the invoice it names.
func storedFacts(pool *pgxpool.Pool, in *intent) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var status string
	var response []byte
	err := pool.QueryRow(ctx, `SELECT status, coalesce(response_body, '') FROM pgsaga_key WHERE key = $1`, in.key).Scan(&status, &response)
	key := fmt.Sprintf("key %s %s", status, response)
	if err != nil {
		key = "key: " + err.Error()
	}
	var body struct {
		InvoiceID string `json:"invoice_id"`
	}
	if json.Unmarshal([]byte(in.body), &body) != nil || body.InvoiceID == "" {
		return key
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE id = $1`, body.InvoiceID).Scan(&n); err != nil {
		return key + "; invoice: " + err.Error()
	}
	return fmt.Sprintf("%s; %d invoice %s", key, n, body.InvoiceID)
}

// invoiceHistory is the history of the intents whose answers name the invoice a payment intent
// pays.
func (l *load) invoiceHistory(pay *intent) string {
	var body struct {
		InvoiceID string `json:"invoice_id"`
	}
	if json.Unmarshal([]byte(pay.body), &body) != nil || body.InvoiceID == "" {
		return "(none)"
	}
	var out []string
	for _, in := range l.intents {
		if in.path == "/invoices" && strings.Contains(in.history(), body.InvoiceID) {
			out = append(out, in.history())
		}
	}
	return strings.Join(out, "\n")
}

// longestGap is the longest time between two definite answers.
func (l *load) longestGap() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var gap time.Duration
	for i := 1; i < len(l.times); i++ {
		gap = max(gap, l.times[i].Sub(l.times[i-1]))
	}
	return gap
}

// requireAllCompleted checks that the database holds n keys, all completed.
func requireAllCompleted(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	var total, completed int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*), count(*) FILTER (WHERE status = 'completed') FROM pgsaga_key`).Scan(&total, &completed))
	require.Equal(t, n, total, "every intent's key is stored")
	require.Equal(t, n, completed, "every key is completed")
}

func statusCounts(intents []*intent) map[int]int {
	out := map[int]int{}
	for _, in := range intents {
		in.mu.Lock()
		for s, n := range in.statuses {
			out[s] += n
		}
		in.mu.Unlock()
	}
	return out
}
