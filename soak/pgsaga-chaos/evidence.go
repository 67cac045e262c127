package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/gateway"
)

// evidence is everything the judge reads: what the clients sent and were answered, the keys and
// their call journal as the database holds them after the drain, the provider's ledger, the
// business tables, the operator's decisions, reconciliation's report, and what went wrong with
// the run's own processes. A run writes it to evidence.json in its directory; the judge is a
// function of it alone, so a recorded run can be judged again (-judge) and a seeded one tested.
type evidence struct {
	// Claim is the promise the run is judged by.
	Claim claim `json:"claim"`
	// Intents are every intent the clients created, in creation order.
	Intents []intentRecord `json:"intents"`
	// Keys are every key in the database after the drain (pgsaga keys --json).
	Keys []cliKey `json:"keys"`
	// Journal is every journaled external call that names a reference.
	Journal []journalRow `json:"journal"`
	// Charges are every charge the provider ever made, in creation order, as they stand.
	Charges []gateway.Charge `json:"charges"`
	// Payments and Invoices are the example service's tables after the drain.
	Payments []paymentRow `json:"payments"`
	Invoices []invoiceRow `json:"invoices"`
	// SettledFailed are the keys the operator settled failed: their 402 payment_failed is an
	// expected answer.
	SettledFailed []scope `json:"settled_failed"`
	// Reconcile is the report of `pgsaga reconcile --json` over the run, after the drain; nil
	// when it was not run.
	Reconcile *reconcileReport `json:"reconcile"`
	// Incidents are what went wrong with the run itself: a process that exited on its own, a
	// fault that was not injected or not undone, a step of the drain that failed.
	Incidents []incident `json:"incidents"`
}

// claim is the promise a run is judged by.
type claim string

const (
	// claimExact is the whole promise, which a single PostgreSQL and a synchronously replicated
	// pair keep: one charge per intent, no intent lost, every answer to a key the same bytes
	// and those the key stores.
	claimExact claim = "exact"
	// claimMoney is the promise an asynchronously replicated pair keeps, where a failover may
	// lose commits the old primary acknowledged: money moves once (one charge and one payment
	// per intent), every intent is finished, and every charge that no completed key accounts
	// for (its key lost after its client had the answer) is in reconciliation's report. An
	// answer may differ from another to the same key after a lost commit, but never in the
	// money it names.
	claimMoney claim = "money"
)

// intentRecord is one intent as the clients saw it.
type intentRecord struct {
	scope
	// Kind is "invoice" or "payment".
	Kind string `json:"kind"`
	// Body is the request's body.
	Body string `json:"body"`
	// Double marks a payment submitted twice at once.
	Double bool `json:"double,omitempty"`
	// Sent is set once a request for it left the client.
	Sent bool `json:"sent"`
	// FirstReplayed is set when the request that started its key was answered as a replay.
	FirstReplayed bool `json:"first_replayed,omitempty"`
	// Answers are the definitive answers the clients got, in order.
	Answers []answerRecord `json:"answers"`
}

// answerRecord is one definitive answer. Body is kept as it came, byte for byte.
type answerRecord struct {
	Status   int    `json:"status"`
	Body     string `json:"body"`
	Replayed bool   `json:"replayed,omitempty"`
	// Drain is set for an answer to a retry made after the run, during the drain.
	Drain bool `json:"drain,omitempty"`
}

// journalRow is one journaled external call attempt of a key: the reference the provider saw,
// and the provider's id of the charge when the attempt learnt it.
type journalRow struct {
	scope
	Reference  string `json:"reference"`
	ProviderID string `json:"provider_id,omitempty"`
}

// paymentRow and invoiceRow are the example service's business rows.
type paymentRow struct {
	ID        string `json:"id"`
	Tenant    string `json:"tenant"`
	InvoiceID string `json:"invoice_id"`
	Amount    int64  `json:"amount"`
	Status    string `json:"status"`
	ChargeID  string `json:"charge_id"`
}

type invoiceRow struct {
	ID       string `json:"id"`
	Tenant   string `json:"tenant"`
	Amount   int64  `json:"amount"`
	Paid     int64  `json:"paid"`
	Reserved int64  `json:"reserved"`
	Status   string `json:"status"`
}

// reconcileReport is what `pgsaga reconcile --json` prints.
type reconcileReport struct {
	Checked   int               `json:"checked"`
	Unmatched []unmatchedCharge `json:"unmatched"`
}

type unmatchedCharge struct {
	ProviderID string `json:"provider_id"`
	Reference  string `json:"reference"`
	Amount     int64  `json:"amount"`
	Currency   string `json:"currency"`
	Status     string `json:"status"`
}

// incident is one thing that went wrong with the run itself; the judge counts each as a
// violation of its kind.
type incident struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// collect reads the evidence after the drain: the clients' intents and answers, the ledger, the
// keys (through the CLI), the journal and the business tables (SQL), and the run's incidents.
func (r *runner) collect(ctx context.Context, dr *drainResult, rec *reconcileReport) (*evidence, error) {
	ev := &evidence{Claim: r.cfg.claim(), Reconcile: rec}
	for _, it := range r.traffic.intents.all() {
		sent, answers, _ := it.snapshot()
		ir := intentRecord{scope: it.scope(), Kind: it.kind, Body: string(it.req.Body), Double: it.double, Sent: !sent.IsZero()}
		it.mu.Lock()
		ir.FirstReplayed = it.firstReplayed
		it.mu.Unlock()
		for _, a := range answers {
			ir.Answers = append(ir.Answers, answerRecord{Status: a.status, Body: string(a.body), Replayed: a.replayed, Drain: a.drain})
		}
		ev.Intents = append(ev.Intents, ir)
	}
	l, err := r.ledger.read(ctx)
	if err != nil {
		return nil, err
	}
	ev.Charges = l.Charges
	if ev.Keys, err = r.env.listKeys(ctx, ""); err != nil {
		return nil, err
	}
	if err := r.readTables(ctx, ev); err != nil {
		return nil, err
	}
	for sc := range dr.settledFailedKeys {
		ev.SettledFailed = append(ev.SettledFailed, sc)
	}
	slices.SortFunc(ev.SettledFailed, func(a, b scope) int { return strings.Compare(a.String(), b.String()) })
	for _, e := range dr.errs {
		ev.Incidents = append(ev.Incidents, incident{Kind: "drain", Text: e})
	}
	for _, d := range append(r.env.daemons(), r.env.sim) {
		for _, exit := range d.exits() {
			ev.Incidents = append(ev.Incidents, incident{Kind: "process exited on its own", Text: exit})
		}
	}
	for _, fo := range r.failovers.all() {
		if fo.err != nil {
			ev.Incidents = append(ev.Incidents, incident{Kind: "failover not done", Text: fmt.Sprintf("%s of %s: %v", fo.kind, fo.from, fo.err)})
		}
	}
	if n := r.faults.Errors.Load(); n > 0 {
		ev.Incidents = append(ev.Incidents, incident{Kind: "fault not injected or not undone", Text: fmt.Sprintf("%d faults failed (see the timeline)", n)})
	}
	return ev, nil
}

// SQL the harness reads the tables with after the drain: the example's business rows, and the
// engine's call journal for the references each key sent.
const (
	selectPayments = `SELECT id, tenant_id, invoice_id, amount, status, coalesce(charge_id, '') FROM payments ORDER BY id`
	selectInvoices = `SELECT id, tenant_id, amount, paid, reserved, status FROM invoices ORDER BY id`
	selectJournal  = `SELECT tenant_id, actor_id, key, reference, coalesce(provider_id, '') FROM pgsaga_call_journal
		WHERE reference IS NOT NULL ORDER BY tenant_id, actor_id, key, attempt`
)

// readTables reads the payments, the invoices and the journal.
func (r *runner) readTables(ctx context.Context, ev *evidence) error {
	conn, err := pgx.Connect(ctx, r.env.dbURL)
	if err != nil {
		return fmt.Errorf("error connecting to read the tables: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if ev.Payments, err = queryAll(ctx, conn, selectPayments, func(row pgx.Rows, p *paymentRow) error {
		return row.Scan(&p.ID, &p.Tenant, &p.InvoiceID, &p.Amount, &p.Status, &p.ChargeID)
	}); err != nil {
		return fmt.Errorf("error reading the payments: %w", err)
	}
	if ev.Invoices, err = queryAll(ctx, conn, selectInvoices, func(row pgx.Rows, inv *invoiceRow) error {
		return row.Scan(&inv.ID, &inv.Tenant, &inv.Amount, &inv.Paid, &inv.Reserved, &inv.Status)
	}); err != nil {
		return fmt.Errorf("error reading the invoices: %w", err)
	}
	if ev.Journal, err = queryAll(ctx, conn, selectJournal, func(row pgx.Rows, j *journalRow) error {
		return row.Scan(&j.Tenant, &j.Actor, &j.Key, &j.Reference, &j.ProviderID)
	}); err != nil {
		return fmt.Errorf("error reading the call journal: %w", err)
	}
	return nil
}

// queryAll runs sql and scans every row into a T.
func queryAll[T any](ctx context.Context, conn *pgx.Conn, sql string, scan func(pgx.Rows, *T) error) ([]T, error) {
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// writeEvidence writes ev to path as JSON.
func writeEvidence(path string, ev *evidence) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// readEvidence reads evidence written by writeEvidence.
func readEvidence(path string) (*evidence, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ev evidence
	if err := json.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("error decoding %s: %w", path, err)
	}
	if ev.Claim != claimExact && ev.Claim != claimMoney {
		return nil, fmt.Errorf("%s: unknown claim %q", path, ev.Claim)
	}
	return &ev, nil
}
