package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
	"github.com/pgsaga/pgsaga/saga"
)

// scenarioResult is one row of the demo's table.
type scenarioResult struct {
	name     string
	requests int
	charges  int
	verdict  string
	failed   bool
	// want is how many succeeded payments each of the scenario's invoices must end with.
	want map[string]int
}

func (r *scenarioResult) fail(msg string) {
	r.failed = true
	r.verdict = "FAIL: " + strings.Join(strings.Fields(msg), " ")
}

func (r *scenarioResult) ok() bool { return !r.failed }

func (r *scenarioResult) expect(invoiceID string, payments int) {
	if r.want == nil {
		r.want = map[string]int{}
	}
	r.want[invoiceID] = payments
}

type scenario struct {
	name string
	run  func(ctx context.Context, res *scenarioResult) error
}

func (d *demo) scenarios() []scenario {
	return []scenario{
		{"double click", d.doubleClick},
		{"lost response", d.lostResponse},
		{"crash between phases", d.crashBetweenPhases},
		{"ten concurrent duplicates", d.concurrentDuplicates},
		{"same key, different body", d.differentBody},
		{"another actor's key", d.anotherActor},
		{"unknowable, then settled", d.unknowableThenSettled},
	}
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r *reply) replayed() bool { return r.header.Get(saga.HeaderReplayed) == "true" }

func (r *reply) code() string {
	var v struct{ Error string }
	_ = json.Unmarshal(r.body, &v)
	return v.Error
}

func (r *reply) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// post sends one request as actor of the demo's tenant (with that actor's API key) to base (the
// API when empty) and counts it in res.
func (d *demo) post(ctx context.Context, res *scenarioResult, base, actor, key, path, body string) (*reply, error) {
	if base == "" {
		base = d.apiURL
	}
	if res != nil {
		res.requests++
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	secret, ok := d.apiKeys[actor]
	if !ok {
		return nil, fmt.Errorf("the demo has no API key for actor %s", actor)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Idempotency-Key", key)
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &reply{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// invoice creates an invoice of amount (setup, not counted).
func (d *demo) invoice(ctx context.Context, amount int) (string, error) {
	r, err := d.post(ctx, nil, "", "alice", uuid.NewString(), "/invoices", fmt.Sprintf(`{"amount": %d, "currency": "USD"}`, amount))
	if err != nil {
		return "", fmt.Errorf("error creating an invoice: %w", err)
	}
	if r.status != http.StatusCreated {
		return "", fmt.Errorf("creating an invoice: %s", r)
	}
	var inv struct{ ID string }
	if err := json.Unmarshal(r.body, &inv); err != nil {
		return "", fmt.Errorf("creating an invoice: %w", err)
	}
	return inv.ID, nil
}

func paymentBody(invoiceID string, amount int) string {
	return fmt.Sprintf(`{"invoice_id": %q, "amount": %d}`, invoiceID, amount)
}

func expectStatus(r *reply, status int, what string) error {
	if r.status != status {
		return fmt.Errorf("%s: want %d, got %s", what, status, r)
	}
	return nil
}

// pay posts the payment body under key as actor to the demo's API and wants status back (what
// names the request in the error).
func (d *demo) pay(ctx context.Context, res *scenarioResult, actor, key, body string, status int, what string) (*reply, error) {
	r, err := d.post(ctx, res, "", actor, key, "/payments", body)
	if err != nil {
		return nil, err
	}
	if err := expectStatus(r, status, what); err != nil {
		return nil, err
	}
	return r, nil
}

// doubleClick sends the same payment twice: the second answer is the stored first one.
func (d *demo) doubleClick(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	key, body := uuid.NewString(), paymentBody(inv, 2000)
	first, err := d.pay(ctx, res, "alice", key, body, http.StatusCreated, "first click")
	if err != nil {
		return err
	}
	second, err := d.pay(ctx, res, "alice", key, body, http.StatusCreated, "second click")
	if err != nil {
		return err
	}
	if !second.replayed() || !bytes.Equal(first.body, second.body) {
		return errors.New("the second click was not a byte-identical replay")
	}
	res.expect(inv, 1)
	res.verdict = "ok: second click replayed byte for byte"
	return nil
}

// lostResponse loses the gateway's answer after it charged: the service resolves it by
// inquiry instead of charging again; the client, which also lost its answer, retries and
// gets the replay.
func (d *demo) lostResponse(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	key, body := uuid.NewString(), paymentBody(inv, 2000)
	d.sim.LoseNext(1)
	defer d.sim.LoseNext(0)
	first, err := d.pay(ctx, res, "alice", key, body, http.StatusCreated, "payment whose gateway answer was lost")
	if err != nil {
		return err
	}
	retry, err := d.post(ctx, res, "", "alice", key, "/payments", body)
	if err != nil {
		return err
	}
	if !retry.replayed() || !bytes.Equal(first.body, retry.body) {
		return fmt.Errorf("the client's retry was not a replay: %s", retry)
	}
	res.expect(inv, 1)
	res.verdict = "ok: gateway answer lost, resolved by inquiry; client retry replayed"
	return nil
}

// concurrentDuplicates sends ten identical requests at once; those answered 409 retry until
// they get the stored answer.
func (d *demo) concurrentDuplicates(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	// A slow gateway keeps the first execution in flight while the others arrive.
	if _, err := d.sim.SetFaults(func(s *sim.Settings) { s.Latency = 150 * time.Millisecond }); err != nil {
		return err
	}
	defer func() { _, _ = d.sim.SetFaults(func(s *sim.Settings) { s.Latency = 0 }) }()

	const n = 10
	key, body := uuid.NewString(), paymentBody(inv, 2000)
	var (
		mu        sync.Mutex
		wg        sync.WaitGroup
		finals    []*reply
		conflicts int
		errs      []error
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			local := &scenarioResult{}
			defer func() {
				mu.Lock()
				res.requests += local.requests
				mu.Unlock()
			}()
			deadline := time.Now().Add(20 * time.Second)
			for {
				r, err := d.post(ctx, local, "", "alice", key, "/payments", body)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if r.status == http.StatusConflict && time.Now().Before(deadline) {
					mu.Lock()
					conflicts++
					mu.Unlock()
					select {
					case <-ctx.Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				mu.Lock()
				finals = append(finals, r)
				mu.Unlock()
				return
			}
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	executed := 0
	for _, r := range finals {
		if err := expectStatus(r, http.StatusCreated, "a duplicate"); err != nil {
			return err
		}
		if !bytes.Equal(r.body, finals[0].body) {
			return errors.New("two duplicates got different answers")
		}
		if !r.replayed() {
			executed++
		}
	}
	if executed != 1 {
		return fmt.Errorf("%d of %d duplicates executed; want exactly 1", executed, n)
	}
	res.expect(inv, 1)
	res.verdict = fmt.Sprintf("ok: 1 execution, %d replays (%d answers were 409 in progress, retried)", n-1, conflicts)
	return nil
}

// differentBody reuses a key for another amount: 422, and nothing is charged for it.
func (d *demo) differentBody(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	key := uuid.NewString()
	if _, err := d.pay(ctx, res, "alice", key, paymentBody(inv, 2000), http.StatusCreated, "first payment"); err != nil {
		return err
	}
	reused, err := d.post(ctx, res, "", "alice", key, "/payments", paymentBody(inv, 2500))
	if err != nil {
		return err
	}
	if reused.status != http.StatusUnprocessableEntity || reused.code() != saga.CodeKeyReused {
		return fmt.Errorf("reused key: want 422 %s, got %s", saga.CodeKeyReused, reused)
	}
	res.expect(inv, 1)
	res.verdict = "ok: 422 idempotency_key_reused, nothing charged for it"
	return nil
}

// anotherActor sends alice's key value as bob: a separate execution, not a replay.
func (d *demo) anotherActor(ctx context.Context, res *scenarioResult) error {
	inv, err := d.invoice(ctx, 5000)
	if err != nil {
		return err
	}
	key, body := uuid.NewString(), paymentBody(inv, 2000)
	alice, err := d.pay(ctx, res, "alice", key, body, http.StatusCreated, "alice's payment")
	if err != nil {
		return err
	}
	bob, err := d.pay(ctx, res, "bob", key, body, http.StatusCreated, "bob's payment")
	if err != nil {
		return err
	}
	if bob.replayed() || bytes.Equal(alice.body, bob.body) {
		return errors.New("bob got alice's stored answer")
	}
	res.expect(inv, 2)
	res.verdict = "ok: separate execution, no replay header"
	return nil
}

// checkExactlyOnce checks res's invoices against the payments table and the gateway's ledger:
// each invoice has the payments the scenario made and no other, each succeeded payment was
// charged exactly once, and nothing is left pending. It sets res.charges.
func (d *demo) checkExactlyOnce(ctx context.Context, res *scenarioResult) error {
	ledger := d.sim.Ledger()
	for inv, want := range res.want {
		rows, err := d.pool.Query(ctx, `SELECT id, status FROM payments WHERE invoice_id = $1 AND tenant_id = $2`, inv, d.tenant)
		if err != nil {
			return fmt.Errorf("error reading payments: %w", err)
		}
		succeeded := 0
		for rows.Next() {
			var id, status string
			if err := rows.Scan(&id, &status); err != nil {
				rows.Close()
				return fmt.Errorf("error reading payments: %w", err)
			}
			n := ledger.ByReference[gateway.DeriveKey("payment", id)]
			res.charges += n
			switch {
			case status != "succeeded":
				rows.Close()
				return fmt.Errorf("payment %s is %s", id, status)
			case n != 1:
				rows.Close()
				return fmt.Errorf("payment %s was charged %d times", id, n)
			}
			succeeded++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("error reading payments: %w", err)
		}
		if succeeded != want {
			return fmt.Errorf("invoice %s has %d succeeded payments, want %d", inv, succeeded, want)
		}
		var paid, sum int64
		if err := d.pool.QueryRow(ctx, `SELECT i.paid, coalesce((SELECT sum(amount) FROM payments p WHERE p.invoice_id = i.id AND p.status = 'succeeded'), 0)
			FROM invoices i WHERE i.id = $1`, inv).Scan(&paid, &sum); err != nil {
			return fmt.Errorf("error reading invoice %s: %w", inv, err)
		}
		if paid != sum {
			return fmt.Errorf("invoice %s records %d paid but its payments sum to %d", inv, paid, sum)
		}
	}
	return nil
}

// checkLedger checks that every charge in the gateway's ledger belongs to one succeeded payment
// of the demo's tenant, charged once.
func (d *demo) checkLedger(ctx context.Context) error {
	for ref, n := range d.sim.Ledger().ByReference {
		id, ok := strings.CutPrefix(ref, "payment:")
		if !ok {
			return fmt.Errorf("the gateway holds a charge for unknown reference %q", ref)
		}
		var status string
		if err := d.pool.QueryRow(ctx, `SELECT status FROM payments WHERE id = $1 AND tenant_id = $2`, id, d.tenant).Scan(&status); err != nil {
			return fmt.Errorf("the gateway charged %q, which has no payment row: %w", ref, err)
		}
		if n != 1 || status != "succeeded" {
			return fmt.Errorf("payment %s is %s and was charged %d times", id, status, n)
		}
	}
	return nil
}

// succeeded counts the demo tenant's succeeded payments.
func (d *demo) succeeded(ctx context.Context) int {
	var n int
	_ = d.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE tenant_id = $1 AND status = 'succeeded'`, d.tenant).Scan(&n)
	return n
}
