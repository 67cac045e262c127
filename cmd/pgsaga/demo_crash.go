package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/saga"
)

// listeningLine matches the line serve prints once it accepts connections.
var listeningLine = regexp.MustCompile(`listening on (http://\S+)`)

// child is a separate process of this program the demo runs (a server it kills, the console).
type child struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

// startCrashServer runs this binary's serve (the example payments API) as a separate process, so
// that the crash is a real kill -9, and waits until it listens.
func (d *demo) startCrashServer(ctx context.Context) (*child, error) {
	return d.startChild(ctx, "server", []string{"serve", "--addr", "127.0.0.1:0", "--ops-addr", "127.0.0.1:0",
		"--gateway-url", d.simURL, "--lease", demoLease.String(), "--log-level", "off"})
}

// startChild runs this program with args on the demo's database (and env) as a separate process,
// and waits until it prints that it listens.
func (d *demo) startChild(ctx context.Context, what string, args []string, env ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("error finding this program to run its %s: %w", what, err)
	}
	cmd := exec.Command(self, args...)
	// The URL goes in the environment, not on a command line that ps shows.
	cmd.Env = append(os.Environ(), envDatabaseURL+"="+d.dbURL)
	if d.pooled {
		cmd.Env = append(cmd.Env, "PGSAGA_DATABASE_POOLING=transaction")
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = childProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("error starting the demo's %s process: %w", what, err)
	}
	s := &child{cmd: cmd, done: make(chan struct{})}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listeningLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { _ = cmd.Wait(); close(s.done) }()
	select {
	case s.url = <-urls:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("the demo's %s process exited before listening (%v)", what, cmd.ProcessState)
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	s.kill()
	return nil, fmt.Errorf("the demo's %s process did not listen within 20s", what)
}

// kill is kill -9, then waits for the process to be gone.
func (s *child) kill() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// crashBetweenPhases sends a payment to a separate server process, kills it (kill -9) once the
// gateway has charged and before the result is recorded, and lets the recovery worker finish
// the key after its lease expires: it asks the gateway by reference and records the charge it
// finds instead of charging again. The client's retry gets the stored answer.
func (d *demo) crashBetweenPhases(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	server, err := d.startCrashServer(ctx)
	if err != nil {
		return err
	}
	defer server.kill()

	// Hold the gateway's answer after it charged, so that the kill lands between phases.
	if _, err := d.sim.SetFaults(func(s *sim.Settings) { s.Latency = time.Minute }); err != nil {
		return err
	}
	unhold := func() { _, _ = d.sim.SetFaults(func(s *sim.Settings) { s.Latency = 0 }) }
	defer unhold()

	key, body := uuid.NewString(), paymentBody(inv, 2000)
	before := d.sim.TotalCharges()
	sent := make(chan error, 1)
	go func() {
		_, err := d.post(ctx, nil, server.url, "alice", key, "/payments", body)
		sent <- err
	}()
	res.requests++
	if err := waitFor(ctx, 20*time.Second, 2*time.Millisecond, func() (bool, error) { return d.sim.TotalCharges() > before, nil }); err != nil {
		return fmt.Errorf("the gateway was never charged: %w", err)
	}
	server.kill()
	if err := <-sent; err == nil {
		return fmt.Errorf("the request to the killed server got an answer")
	}
	unhold()

	scope := saga.Scope{Tenant: d.tenant, Actor: "alice"}
	k, err := readKey(ctx, d.pool, scope, key)
	if err != nil {
		return err
	}
	if k.Status != saga.KeyStatusStarted {
		return fmt.Errorf("after the crash the key is %s, want started", k.Status)
	}
	crashedAt := k.RecoveryPoint

	// The worker: once the dead server's lease expires, claim the key and resume it.
	// Until then the resume is refused as not due (saga.RefusedNotDue).
	var last error
	err = waitFor(ctx, 30*time.Second, 100*time.Millisecond, func() (bool, error) {
		_, last = d.client.Resume(ctx, scope, key, &saga.ResumeOpts{Due: true})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the worker did not finish the key (last error: %v): %w", last, err)
	}

	retry, err := d.post(ctx, res, "", "alice", key, "/payments", body)
	if err != nil {
		return err
	}
	if retry.status != http.StatusCreated || !retry.replayed() {
		return fmt.Errorf("the client's retry after recovery: want a replayed 201, got %s", retry)
	}
	res.expect(inv, 1)
	res.verdict = fmt.Sprintf("ok: server killed (-9) after charging, key at %s; worker resumed it, no second charge; retry replayed", crashedAt)
	return nil
}

// readKey reads one key through saga's read API.
func readKey(ctx context.Context, pool *pgxpool.Pool, scope saga.Scope, key string) (*saga.Key, error) {
	reader, err := saga.NewClient(&saga.Config{DB: pool})
	if err != nil {
		return nil, err
	}
	k, err := reader.KeyGet(ctx, scope, key)
	if err != nil {
		return nil, fmt.Errorf("error reading key %q: %w", key, err)
	}
	return k, nil
}

// waitFor polls cond every interval until it holds, returns an error, or timeout passes.
func waitFor(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
