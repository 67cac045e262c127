package main_test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// The tests named TestPgBouncer* run the binary through PgBouncer in transaction pooling mode
// (dbtest's bouncer, 4 server connections per database).

// serve and worker through the bouncer, declared with --database-pooling=transaction: the
// exec mode is chosen for it, a duplicate of a request in flight listens on the direct
// --listen-database-url, the in-process worker's River polls, and the operator's commands read
// and resume through the bouncer too.
func TestPgBouncerServeWorkerAndOperatorCommands(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pooled := w.db.PooledURL(t)
	p := start(t, nil, true, "serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0", "--database-url", pooled,
		"--database-pooling", "transaction", "--listen-database-url", w.db.URL, "--gateway-url", w.simURL, "--worker")
	// Each request's API key is read through the bouncer too.
	as := bearer(apiKey(t, w.db.URL, "t1", "alice").Secret, uuid.NewString())
	status, _, body := httpDo(t, "POST", p.url+"/invoices", as, `{"amount": 5000, "currency": "USD"}`)
	require.Equal(t, http.StatusCreated, status, string(body))
	invoiceID := strings.Split(strings.Split(string(body), `"id":"`)[1], `"`)[0]

	// The gateway is down for this request: 503, the key stays started; the worker (through
	// the bouncer, River polling) finishes it once its next attempt is due.
	w.sim.FailNext(1000)
	key := uuid.NewString()
	as["Idempotency-Key"] = key
	payment := `{"invoice_id": "` + invoiceID + `", "amount": 2000}`
	status, _, body = httpDo(t, "POST", p.url+"/payments", as, payment)
	require.Equal(t, http.StatusServiceUnavailable, status, string(body))
	w.sim.FailNext(0)
	waitUntil(t, 30*time.Second, "the in-process worker to finish the key", func() bool {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	status, header, body := httpDo(t, "POST", p.url+"/payments", as, payment)
	require.Equal(t, http.StatusCreated, status, string(body))
	require.Equal(t, "true", header.Get("Idempotent-Replayed"))
	require.Equal(t, 1, w.sim.TotalCharges())
	require.Contains(t, p.stderr.String(), "listen on --listen-database-url")

	pooling := []string{"--database-url", pooled, "--database-pooling", "transaction"}
	keys := pgsaga(t, nil, append([]string{"keys", "--json"}, pooling...)...)
	require.Equal(t, 0, keys.code, keys.String())
	require.Contains(t, keys.stdout, key)
	show := pgsaga(t, nil, append([]string{"show", "--tenant", "t1", "--actor", "alice", "--json", key}, pooling...)...)
	require.Equal(t, 0, show.code, show.String())
	require.Contains(t, show.stdout, `"state":"completed"`)
	require.Equal(t, 0, p.stop(os.Interrupt), p.stderr.String())
}

// The worker command through the bouncer: River polls, its leader's sweep finds the stuck key.
func TestPgBouncerWorker(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	key, _ := w.stuckPayment("t1", "alice")
	p := start(t, nil, false, "worker", "--database-url", w.db.PooledURL(t), "--database-pooling", "transaction",
		"--gateway-url", w.simURL, "--sweep-interval", "100ms")
	waitUntil(t, 30*time.Second, "the worker to finish the key", func() bool {
		return w.count(`SELECT count(*) FROM pgsaga_key WHERE key = $1 AND status = 'completed'`, key) == 1
	})
	require.Equal(t, 1, w.sim.TotalCharges())
	require.Equal(t, 0, p.stop(os.Interrupt), p.stderr.String())
}

// What cannot work through a transaction pooler is refused at start, in one line that says
// what to change, instead of running degraded: a LISTEN through the pooler (serve's waits,
// River's notifications), and migrate's session lock.
func TestPgBouncerRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pooled := w.db.PooledURL(t)
	// pgx's cache_describe in the URL, as a user who knows about prepared statements would
	// write it, but the pooling not declared.
	undeclared := w.db.PooledURL(t, "default_query_exec_mode=cache_describe")
	for _, c := range []struct {
		name  string
		args  []string
		usage bool
		want  string
	}{
		{"serve, pooling not declared", []string{"serve", "--addr", "127.0.0.1:0", "--database-url", undeclared},
			false, "declare it with --database-pooling=transaction"},
		{"serve, listening through the pooler", []string{"serve", "--addr", "127.0.0.1:0", "--database-url", pooled,
			"--database-pooling", "transaction", "--listen-database-url", pooled},
			false, "--listen-database-url must reach the same database directly"},
		{"worker, pooling not declared", []string{"worker", "--database-url", undeclared},
			false, "declare it with --database-pooling=transaction (River then polls)"},
		{"migrate", []string{"migrate", "--database-url", pooled, "--database-pooling", "transaction"},
			true, "run it with a direct --database-url"},
		{"another exec mode", []string{"keys", "--database-url", w.db.PooledURL(t, "default_query_exec_mode=describe_exec"),
			"--database-pooling", "transaction"},
			true, "--database-pooling=transaction needs pgx's default_query_exec_mode=cache_describe, and --database-url asks for describe_exec"},
		{"unknown pooling", []string{"keys", "--database-url", pooled, "--database-pooling", "statement"},
			true, `invalid --database-pooling "statement"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// The daemons log their start on stderr: keep it for the one-line error.
			r := pgsaga(t, nil, append(c.args, "--log-level", "off")...)
			if c.usage {
				requireUsage(t, r, c.want)
				return
			}
			requireFailure(t, r, c.want)
		})
	}
}

// simPlaceholder stands for the subtest's gateway simulator in a command's arguments.
const simPlaceholder = "{sim}"

// A PgBouncer URL in pgx's default mode without --database-pooling transaction stops every
// command before it runs anything of its own, with one line naming the flag, instead of a
// prepared statement collision (42P05) or a half-done command.
func TestPgBouncerUndeclaredStopsEveryCommand(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate"},
		{"keys"},
		{"show", "--tenant", "t1", "--actor", "alice", "some-key-1"},
		{"resume", "--tenant", "t1", "--actor", "alice", "--gateway-url", simPlaceholder, "some-key-1"},
		{"settle", "--tenant", "t1", "--actor", "alice", "--outcome", "failed", "--note", "n", "--gateway-url", simPlaceholder, "some-key-1"},
		{"gc", "--dry-run"},
		{"reconcile", "--since", "1h", "--gateway-url", simPlaceholder},
		{"apikey", "list"},
		{"apikey", "create", "--tenant", "t1", "--actor", "alice"},
		{"operator", "list"},
		{"serve", "--addr", "127.0.0.1:0", "--ops-addr", "", "--gateway-url", simPlaceholder},
		{"worker", "--gateway-url", simPlaceholder},
		{"console", "--addr", "127.0.0.1:0", "--gateway-url", simPlaceholder},
		{"demo"},
	} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			// A database of its own is a pool of its own in the bouncer: the probe's clients are
			// the only ones handing its server connections around, as it needs to tell the
			// pooler's mode (another client's transaction in between can hide it).
			w := newWorld(t)
			var argv []string
			for _, arg := range args {
				argv = append(argv, strings.ReplaceAll(arg, simPlaceholder, w.simURL))
			}
			r := pgsaga(t, []string{"PGSAGA_CONSOLE_TOKEN=" + consoleToken}, append(argv, "--database-url", w.db.PooledURL(t), "--log-level", "off")...)
			requireFailure(t, r, "declare it with --database-pooling=transaction")
			require.Contains(t, r.stderr, "through a pooler in transaction pooling mode", r.String())
			require.Zero(t, w.count(`SELECT count(*) FROM pgsaga_api_key`), "apikey create stopped before writing")
		})
	}
}
