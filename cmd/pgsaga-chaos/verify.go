package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/gateway/sim"
)

// violation is one broken promise, with what the harness knows about it.
type violation struct {
	kind string // "double charge", "lost intent", …
	key  string // the intent's key, when there is one
	text string
}

// paymentRow and invoiceRow are the example service's business rows.
type paymentRow struct {
	id, invoiceID, status, chargeID string
	amount                          int64
}

type invoiceRow struct {
	id, status             string
	amount, paid, reserved int64
}

// state is everything the checks read after the drain.
type state struct {
	ledger   *sim.Ledger
	charges  map[string][]gateway.Charge // by reference
	keys     map[string]cliKey
	payments map[string]paymentRow
	invoices []invoiceRow
}

// readState reads the ledger, the keys (through the CLI) and the business tables (SQL).
func (r *runner) readState(ctx context.Context) (*state, error) {
	l, err := r.ledger.read(ctx)
	if err != nil {
		return nil, err
	}
	st := &state{ledger: l, charges: byReference(l), keys: map[string]cliKey{}, payments: map[string]paymentRow{}}
	keys, err := r.env.listKeys(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		st.keys[k.Key] = k
	}
	conn, err := pgx.Connect(ctx, r.env.dbURL)
	if err != nil {
		return nil, fmt.Errorf("error connecting to read the payments: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT id, invoice_id, amount, status, coalesce(charge_id, '') FROM payments WHERE tenant_id = $1`, tenant)
	if err != nil {
		return nil, fmt.Errorf("error reading the payments: %w", err)
	}
	for rows.Next() {
		var p paymentRow
		if err := rows.Scan(&p.id, &p.invoiceID, &p.amount, &p.status, &p.chargeID); err != nil {
			return nil, err
		}
		st.payments[p.id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading the payments: %w", err)
	}
	rows, err = conn.Query(ctx, `SELECT id, amount, paid, reserved, status FROM invoices WHERE tenant_id = $1 ORDER BY id`, tenant)
	if err != nil {
		return nil, fmt.Errorf("error reading the invoices: %w", err)
	}
	for rows.Next() {
		var inv invoiceRow
		if err := rows.Scan(&inv.id, &inv.amount, &inv.paid, &inv.reserved, &inv.status); err != nil {
			return nil, err
		}
		st.invoices = append(st.invoices, inv)
	}
	return st, rows.Err()
}

// check returns every violation of the promises: one charge per payment, no intent lost, every
// answer true to the ledger and the tables, replays identical, the books balanced.
func (r *runner) check(st *state, settledFailed map[string]bool) (vs []violation, lost int) {
	add := func(kind, key, format string, args ...any) {
		vs = append(vs, violation{kind: kind, key: key, text: fmt.Sprintf(format, args...)})
	}

	refs := make([]string, 0, len(st.ledger.ByReference))
	for ref := range st.ledger.ByReference {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		if n := st.ledger.ByReference[ref]; n > 1 {
			add("double charge", r.keyOfReference(st, ref), "reference %s was charged %d times: %s", ref, n, chargeList(st.charges[ref]))
		}
	}

	answered := map[string]bool{} // payment ids some intent's answer names
	for _, it := range r.traffic.intents.all() {
		sent, answers, _ := it.snapshot()
		if sent.IsZero() {
			continue // never left the client: no key, nothing to check
		}
		k, ok := st.keys[it.key()]
		switch {
		case !ok:
			lost++
			add("lost intent", it.key(), "%s %s: sent, but no key in the database (%d answers)", it.kind, it.key(), len(answers))
			continue
		case k.State != "completed":
			lost++
			add("lost intent", it.key(), "%s %s: key %s at %s after the drain (attempts %d, last error %q)", it.kind, it.key(), k.State, k.RecoveryPoint, k.Attempts, k.LastError)
			continue
		case len(answers) == 0:
			lost++
			add("lost intent", it.key(), "%s %s: completed, but the client never got a definitive answer", it.kind, it.key())
			continue
		}
		first := answers[0]
		for _, a := range answers[1:] {
			if a.status != first.status || !bytes.Equal(a.body, first.body) {
				add("answers differ", it.key(), "%s %s: answered %d %s, then %d %s", it.kind, it.key(), first.status, first.body, a.status, a.body)
			}
		}
		if k.Response == nil || k.Response.Status != first.status || !jsonEqual(k.Response.Body, first.body) {
			add("answer not stored", it.key(), "%s %s: answered %d %s, the key stores %+v", it.kind, it.key(), first.status, first.body, k.Response)
		}
		switch {
		case it.kind == "invoice" && first.status == http.StatusCreated:
		case it.kind == "payment" && first.status == http.StatusCreated:
			id, chargeID := field(first.body, "id"), field(first.body, "charge_id")
			answered[id] = true
			charges := st.charges[gateway.DeriveKey("payment", id)]
			if len(charges) != 1 || charges[0].ID != chargeID || charges[0].Status != gateway.ChargeStatusSucceeded {
				add("201 without its one charge", it.key(), "payment %s answered 201 with charge %s; the ledger holds for its reference: %s", id, chargeID, chargeList(charges))
			}
			if p := st.payments[id]; p.status != "succeeded" || p.chargeID != chargeID {
				add("201 without its payment", it.key(), "payment %s answered 201 with charge %s; the payments table holds %+v", id, chargeID, p)
			}
		case it.kind == "payment" && first.status == http.StatusPaymentRequired && field(first.body, "error") == "payment_failed" && settledFailed[it.key()]:
			id := field(first.body, "payment_id")
			answered[id] = true
			if charges := st.charges[gateway.DeriveKey("payment", id)]; len(charges) > 0 {
				add("settled failed but charged", it.key(), "payment %s was settled failed; the ledger holds %s", id, chargeList(charges))
			}
			if p := st.payments[id]; p.status != "failed" {
				add("settled failed, payment not failed", it.key(), "payment %s was settled failed; the payments table holds %+v", id, p)
			}
		default:
			add("unexpected answer", it.key(), "%s %s: answered %d %s", it.kind, it.key(), first.status, first.body)
		}
	}

	for _, c := range st.ledger.Charges {
		id, ok := strings.CutPrefix(c.Reference, "payment:")
		p := st.payments[id]
		if !ok || p.status != "succeeded" || p.chargeID != c.ID {
			add("charge not recorded", r.keyOfReference(st, c.Reference), "charge %s (%s, %s) has no succeeded payment recording it; the payments table holds %+v", c.ID, c.Reference, c.Status, p)
		}
	}
	paid := map[string]int64{}
	for _, p := range st.payments {
		if p.status == "succeeded" {
			paid[p.invoiceID] += p.amount
		}
		if p.status == "pending" {
			add("payment left pending", r.keyOfReference(st, gateway.DeriveKey("payment", p.id)), "payment %s is still pending after the drain", p.id)
		}
		if !answered[p.id] {
			add("payment no answer names", r.keyOfReference(st, gateway.DeriveKey("payment", p.id)), "payment %s (%s) is named by no intent's answer", p.id, p.status)
		}
	}
	for _, inv := range st.invoices {
		wantStatus := "open"
		if inv.paid == inv.amount {
			wantStatus = "paid"
		}
		if inv.paid != paid[inv.id] || inv.reserved != inv.paid || inv.status != wantStatus {
			add("invoice books", "", "invoice %s: paid %d, reserved %d, status %s; its succeeded payments sum to %d", inv.id, inv.paid, inv.reserved, inv.status, paid[inv.id])
		}
	}

	for _, key := range r.traffic.tr.firstReplaysList() {
		add("first request answered as a replay", key, "the request that started key %s was answered with Idempotent-Replayed: true", key)
	}
	for _, d := range append(r.env.daemons(), r.env.sim) {
		for _, exit := range d.exits() {
			add("process exited on its own", "", "%s", exit)
		}
	}
	if n := r.faults.Errors.Load(); n > 0 {
		add("fault not injected or not undone", "", "%d faults failed (see the timeline)", n)
	}
	return vs, lost
}

// keyOfReference finds the key whose payment carries reference ref ("payment:<id>"), through
// the stored responses; "" when none does.
func (r *runner) keyOfReference(st *state, ref string) string {
	id, _ := strings.CutPrefix(ref, "payment:")
	for _, k := range st.keys {
		if k.Response == nil {
			continue
		}
		if field(k.Response.Body, "id") == id || field(k.Response.Body, "payment_id") == id {
			return k.Key
		}
	}
	return ""
}

func chargeList(cs []gateway.Charge) string {
	if len(cs) == 0 {
		return "no charge"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s %s %d %s", c.ID, c.Status, c.Amount, c.Currency)
	}
	return strings.Join(parts, ", ")
}

// jsonEqual compares two JSON documents by value (the CLI prints a stored body re-encoded).
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// evidence writes what the run knows about a violation's key to w: the key with its calls
// (show --json), the ledger's charges for its reference, the clients' requests and the timeline
// around them.
func (r *runner) evidence(ctx context.Context, st *state, key string) string {
	var b strings.Builder
	it := r.traffic.intents.get(key)
	if it == nil {
		return fmt.Sprintf("key %s: not an intent of this run\n", key)
	}
	fmt.Fprintf(&b, "key %s (%s, actor %s) body %s\n", key, it.kind, it.actor, it.req.Body)
	k, raw, err := r.env.showKey(ctx, it.actor, key)
	if err != nil {
		fmt.Fprintf(&b, "  show: %v\n", err)
	} else {
		fmt.Fprintf(&b, "  show --json: %s\n", bytes.TrimSpace(raw))
		if ref := k.reference(); ref != "" {
			fmt.Fprintf(&b, "  ledger for %s: %s\n", ref, chargeList(st.charges[ref]))
		}
	}
	reqs := r.traffic.tr.requestsOf(key)
	var from, to time.Time
	for i, q := range reqs {
		fmt.Fprintf(&b, "  request %d at %s: %s\n", i+1, r.tl.offset(q.at), q)
		if from.IsZero() || q.at.Before(from) {
			from = q.at
		}
		if end := q.at.Add(q.took); end.After(to) {
			to = end
		}
	}
	_, answers, _ := it.snapshot()
	for _, a := range answers {
		fmt.Fprintf(&b, "  answer at %s (drain %v): %d %s\n", r.tl.offset(a.at), a.drain, a.status, a.body)
	}
	if !from.IsZero() {
		b.WriteString("  timeline around its requests:\n")
		for _, line := range r.tl.between(from.Add(-3*time.Second), to.Add(3*time.Second)) {
			b.WriteString("    " + line + "\n")
		}
	}
	return b.String()
}
