package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/examples/payments"
	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/internal/keyjson"
)

// world builds the evidence of a run in which every promise held: each call adds an intent as
// a clean run records it (its answers, its completed key storing the answer, its journal, its
// charge in the ledger, its rows in the tables). A test then breaks one thing and asks the
// judge.
type world struct {
	ev *evidence
	n  int
}

func newWorld(c claim) *world { return &world{ev: &evidence{Claim: c}} }

var (
	alice = scope{Tenant: "chaos", Actor: "client-01"}
	bob   = scope{Tenant: "chaos", Actor: "client-03"}
	carol = scope{Tenant: "chaos-2", Actor: "client-02"}
)

// in returns who's scope with key.
func in(who scope, key string) scope { who.Key = key; return who }

func (w *world) next(prefix string) string {
	w.n++
	return fmt.Sprintf("%s_%04d", prefix, w.n)
}

// invoice adds an invoice intent of sc, answered 201, and its invoice row; it returns the
// invoice's id.
func (w *world) invoice(sc scope, amount int64) string {
	id := w.next("inv")
	body := fmt.Sprintf(`{"id":%q,"amount":%d,"currency":"USD","paid":0,"status":"open"}`, id, amount)
	w.intent(sc, "invoice", fmt.Sprintf(`{"amount":%d,"currency":"USD"}`, amount), payments.OpCreateInvoice, http.StatusCreated, body)
	w.ev.Invoices = append(w.ev.Invoices, invoiceRow{ID: id, Tenant: sc.Tenant, Amount: amount, Status: "open"})
	return id
}

// pay adds a payment intent of sc on invoice, answered 201: its journal row, its succeeded
// charge, its succeeded payment, the invoice paid. It returns the payment's and the charge's
// ids.
func (w *world) pay(sc scope, invoice string, amount int64) (id, chargeID string) {
	id, chargeID = intentPaymentID(sc), w.next("ch")
	body := fmt.Sprintf(`{"id":%q,"invoice_id":%q,"amount":%d,"status":"succeeded","charge_id":%q}`, id, invoice, amount, chargeID)
	w.intent(sc, "payment", fmt.Sprintf(`{"invoice_id":%q,"amount":%d}`, invoice, amount), payments.OpCreatePayment, http.StatusCreated, body)
	w.ev.Journal = append(w.ev.Journal, journalRow{scope: sc, Reference: paymentReference(id), ProviderID: chargeID})
	w.ev.Charges = append(w.ev.Charges, gateway.Charge{ID: chargeID, Amount: amount, Currency: "USD", Reference: paymentReference(id), Status: gateway.StatusSucceeded})
	w.ev.Payments = append(w.ev.Payments, paymentRow{ID: id, Tenant: sc.Tenant, InvoiceID: invoice, Amount: amount, Status: "succeeded", ChargeID: chargeID})
	inv := w.invoiceRow(invoice)
	inv.Paid += amount
	inv.Reserved += amount
	if inv.Paid == inv.Amount {
		inv.Status = "paid"
	}
	return id, chargeID
}

// settleFailed adds a payment intent of sc whose key the operator settled failed: no charge, a
// failed payment, 402 payment_failed.
func (w *world) settleFailed(sc scope, invoice string, amount int64) string {
	id := intentPaymentID(sc)
	body := fmt.Sprintf(`{"error":"payment_failed","message":"the payment failed","payment_id":%q}`, id)
	w.intent(sc, "payment", fmt.Sprintf(`{"invoice_id":%q,"amount":%d}`, invoice, amount), payments.OpCreatePayment, http.StatusPaymentRequired, body)
	w.ev.Journal = append(w.ev.Journal, journalRow{scope: sc, Reference: paymentReference(id)})
	w.ev.Payments = append(w.ev.Payments, paymentRow{ID: id, Tenant: sc.Tenant, InvoiceID: invoice, Amount: amount, Status: "failed"})
	w.ev.SettledFailed = append(w.ev.SettledFailed, sc)
	return id
}

// intent adds an intent answered once with status and body, and its completed key storing that.
func (w *world) intent(sc scope, kind, reqBody, operation string, status int, body string) {
	w.ev.Intents = append(w.ev.Intents, intentRecord{scope: sc, Kind: kind, Body: reqBody, Sent: true,
		Answers: []answerRecord{{Status: status, Body: body}}})
	w.ev.Keys = append(w.ev.Keys, cliKey{Key: keyjson.Key{Tenant: sc.Tenant, Actor: sc.Actor, Key: sc.Key, Operation: operation,
		State: "completed", RecoveryPoint: "finished", Attempts: 1, Response: &keyjson.Response{Status: status, Body: json.RawMessage(body)}}})
}

func (w *world) intentOf(sc scope) *intentRecord {
	for i := range w.ev.Intents {
		if w.ev.Intents[i].scope == sc {
			return &w.ev.Intents[i]
		}
	}
	panic("no intent " + sc.String())
}

func (w *world) keyOf(sc scope) *cliKey {
	for i := range w.ev.Keys {
		if w.ev.Keys[i].scope() == sc {
			return &w.ev.Keys[i]
		}
	}
	panic("no key " + sc.String())
}

func (w *world) dropKey(sc scope) {
	w.ev.Keys = slices.DeleteFunc(w.ev.Keys, func(k cliKey) bool { return k.scope() == sc })
}

func (w *world) invoiceRow(id string) *invoiceRow {
	for i := range w.ev.Invoices {
		if w.ev.Invoices[i].ID == id {
			return &w.ev.Invoices[i]
		}
	}
	panic("no invoice " + id)
}

func (w *world) paymentRow(id string) *paymentRow {
	for i := range w.ev.Payments {
		if w.ev.Payments[i].ID == id {
			return &w.ev.Payments[i]
		}
	}
	panic("no payment " + id)
}

// replay adds a second answer to sc's intent: its first answer again, replayed.
func (w *world) replay(sc scope) {
	it := w.intentOf(sc)
	a := it.Answers[0]
	a.Replayed = true
	it.Answers = append(it.Answers, a)
}

// reconcile adds reconciliation's report, naming the charges given.
func (w *world) reconcile(chargeIDs ...string) {
	w.ev.Reconcile = &reconcileReport{Checked: len(w.ev.Charges), Unmatched: []unmatchedCharge{}}
	for _, id := range chargeIDs {
		for _, c := range w.ev.Charges {
			if c.ID == id {
				w.ev.Reconcile.Unmatched = append(w.ev.Reconcile.Unmatched, unmatchedCharge{ProviderID: c.ID, Reference: c.Reference,
					Amount: c.Amount, Currency: c.Currency, Status: string(c.Status)})
			}
		}
	}
}

// shop is the clean run every case starts from: two tenants, three actors, invoices paid in
// parts, a double click, one key string for three scopes' invoices (the same request in each),
// a payment settled failed.
type shop struct {
	w *world
	// aliceInv is alice's invoice; alicePay and aliceCharge her first payment on it.
	aliceInv, alicePay, aliceCharge string
	// carolInv is carol's invoice under the shared key string, which she pays in full.
	carolInv string
	// failedPay is carol's payment the operator settled failed.
	failedPay string
	// shared is the key string three scopes use.
	shared string
}

func newShop(c claim) *shop {
	s := &shop{w: newWorld(c), shared: "shared-key-0001"}
	w := s.w
	s.aliceInv = w.invoice(in(alice, s.shared), 10000)
	s.alicePay, s.aliceCharge = w.pay(in(alice, "alice-pay-0001"), s.aliceInv, 2500)
	w.pay(in(alice, "alice-pay-0002"), s.aliceInv, 3000)
	w.replay(in(alice, "alice-pay-0002")) // a double click
	w.intentOf(in(alice, "alice-pay-0002")).Double = true
	bobInv := w.invoice(in(bob, s.shared), 10000)
	w.pay(in(bob, "bob-pay-0001"), bobInv, 1000)
	s.carolInv = w.invoice(in(carol, s.shared), 10000)
	w.pay(in(carol, "carol-pay-0001"), s.carolInv, 4000)
	w.pay(in(carol, "carol-pay-0002"), s.carolInv, 6000)
	s.failedPay = w.settleFailed(in(carol, "carol-pay-0003"), w.invoice(in(carol, "carol-inv-0002"), 4000), 700)
	if c == claimMoney {
		w.reconcile()
	}
	return s
}

// TestJudge feeds the judge seeded runs: a clean one must pass, and each broken promise must be
// found, as exactly the kinds of violation listed.
func TestJudge(t *testing.T) {
	t.Parallel()
	alicePay1 := in(alice, "alice-pay-0001")
	for _, tc := range []struct {
		name  string
		claim claim
		// breakIt breaks the clean run; nil leaves it clean.
		breakIt func(s *shop)
		// want are the kinds of violation the judge must find, and no other; none: it passes.
		want []string
		// check looks at the verdict's figures.
		check func(t *testing.T, v *verdict)
	}{
		{name: "clean run", claim: claimExact},
		{name: "clean run, money", claim: claimMoney},

		// Double charges.
		{name: "two charges for one reference", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_again", Amount: 2500, Currency: "USD",
				Reference: paymentReference(s.alicePay), Status: gateway.StatusSucceeded})
		}, want: []string{kindDoubleCharge, kindNoCharge, kindChargeNotRecorded}, check: func(t *testing.T, v *verdict) {
			require.Equal(t, 1, v.doubleCharges)
		}},
		{name: "a pending second charge is a double charge", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_again", Amount: 2500, Currency: "USD",
				Reference: paymentReference(s.alicePay), Status: gateway.StatusPending})
		}, want: []string{kindDoubleCharge, kindNoCharge, kindChargeNotRecorded}},
		{name: "two charges for one intent under two references (its journal)", claim: claimExact, breakIt: func(s *shop) {
			// An execution made payment A and charged it, and a later one made payment B and
			// charged again: the key's journal holds both references.
			s.w.ev.Journal = append(s.w.ev.Journal, journalRow{scope: alicePay1, Reference: paymentReference("pay_first")})
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_first", Amount: 2500, Currency: "USD",
				Reference: paymentReference("pay_first"), Status: gateway.StatusSucceeded})
		}, want: []string{kindDoubleCharge, kindChargeNotRecorded}, check: func(t *testing.T, v *verdict) {
			require.Equal(t, 1, v.doubleCharges)
		}},
		{name: "two charges for one intent under two references (its answers), money", claim: claimMoney, breakIt: func(s *shop) {
			// A failover lost every commit of the intent after its client had the 201 for
			// payment A; the double click's other request ran it again with a new payment id:
			// a new reference, a second charge. Reconciliation reports the first; the money
			// moved twice all the same.
			w := s.w
			it := w.intentOf(alicePay1)
			it.Double = true
			it.Answers = append(it.Answers, answerRecord{Status: http.StatusCreated,
				Body: fmt.Sprintf(`{"id":"pay_second","invoice_id":%q,"amount":2500,"status":"succeeded","charge_id":"ch_second"}`, s.aliceInv)})
			k := w.keyOf(alicePay1)
			k.Response.Body = json.RawMessage(it.Answers[1].Body)
			w.ev.Journal = slices.DeleteFunc(w.ev.Journal, func(j journalRow) bool { return j.scope == alicePay1 })
			w.ev.Journal = append(w.ev.Journal, journalRow{scope: alicePay1, Reference: paymentReference("pay_second")})
			w.ev.Charges = append(w.ev.Charges, gateway.Charge{ID: "ch_second", Amount: 2500, Currency: "USD",
				Reference: paymentReference("pay_second"), Status: gateway.StatusSucceeded})
			p := w.paymentRow(s.alicePay)
			p.ID, p.ChargeID = "pay_second", "ch_second"
			w.reconcile(s.aliceCharge)
		}, want: []string{kindDoubleCharge, kindChangedMoney}}, // payment A's row is gone: the key names B now
		{name: "a charge under a reference no intent names, money", claim: claimMoney, breakIt: func(s *shop) {
			// The same, seen only from the ledger: the first execution's payment id is named
			// by nothing that survived. Reported, but not attributable to one charge per intent.
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_orphan", Amount: 2500, Currency: "USD",
				Reference: paymentReference("pay_orphan"), Status: gateway.StatusSucceeded})
			s.w.reconcile("ch_orphan")
		}, want: []string{kindChargeNoIntent}},

		{name: "a second charge under the intent's reference, reported, money", claim: claimMoney, breakIt: func(s *shop) {
			// A re-execution after a lost commit sent the derived reference again, blind (the
			// provider could neither be asked nor de-duplicate): the key recorded the second
			// charge, reconciliation reports the first. Money moved twice all the same.
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_blind", Amount: 2500, Currency: "USD",
				Reference: paymentReference(s.alicePay), Status: gateway.StatusSucceeded})
			s.w.reconcile("ch_blind")
		}, want: []string{kindDoubleCharge, kindNoCharge}},
		{name: "a payment id drawn in a phase, money", claim: claimMoney, breakIt: func(s *shop) {
			w := s.w
			sc := in(bob, "bob-pay-0001")
			old := intentPaymentID(sc)
			it := w.intentOf(sc)
			it.Answers[0].Body = strings.ReplaceAll(it.Answers[0].Body, old, "pay_random")
			w.keyOf(sc).Response.Body = json.RawMessage(it.Answers[0].Body)
			for i := range w.ev.Journal {
				if w.ev.Journal[i].scope == sc {
					w.ev.Journal[i].Reference = paymentReference("pay_random")
				}
			}
			for i := range w.ev.Charges {
				if w.ev.Charges[i].Reference == paymentReference(old) {
					w.ev.Charges[i].Reference = paymentReference("pay_random")
				}
			}
			w.paymentRow(old).ID = "pay_random"
		}, want: []string{kindNotDerived}},
		{name: "a payment id drawn in a phase, the exact claim does not rest on it", claim: claimExact, breakIt: func(s *shop) {
			w := s.w
			sc := in(bob, "bob-pay-0001")
			old := intentPaymentID(sc)
			it := w.intentOf(sc)
			it.Answers[0].Body = strings.ReplaceAll(it.Answers[0].Body, old, "pay_random")
			w.keyOf(sc).Response.Body = json.RawMessage(it.Answers[0].Body)
			for i := range w.ev.Journal {
				if w.ev.Journal[i].scope == sc {
					w.ev.Journal[i].Reference = paymentReference("pay_random")
				}
			}
			for i := range w.ev.Charges {
				if w.ev.Charges[i].Reference == paymentReference(old) {
					w.ev.Charges[i].Reference = paymentReference("pay_random")
				}
			}
			w.paymentRow(old).ID = "pay_random"
		}},

		// Lost intents.
		{name: "a key left started", claim: claimExact, breakIt: func(s *shop) {
			k := s.w.keyOf(alicePay1)
			k.State, k.RecoveryPoint, k.Response = "started", "payment_created", nil
		}, want: []string{kindLost}, check: func(t *testing.T, v *verdict) { require.Equal(t, 1, v.lost) }},
		{name: "a key sent and not in the database", claim: claimExact, breakIt: func(s *shop) {
			s.w.dropKey(in(bob, "bob-pay-0001")) // and its journal with it
			s.w.ev.Journal = slices.DeleteFunc(s.w.ev.Journal, func(j journalRow) bool { return j.scope == in(bob, "bob-pay-0001") })
		}, want: []string{kindLost, kindChargeNotRecorded}},
		{name: "a completed key whose client never got an answer", claim: claimExact, breakIt: func(s *shop) {
			s.w.intentOf(in(bob, s.shared)).Answers = nil
		}, want: []string{kindLost}},
		{name: "a key left parked, money", claim: claimMoney, breakIt: func(s *shop) {
			k := s.w.keyOf(alicePay1)
			k.State, k.Response = "failed", nil // a parked key accounts for its charge: nothing to reconcile
		}, want: []string{kindLost}},
		{name: "a key gone and never answered, money", claim: claimMoney, breakIt: func(s *shop) {
			s.w.dropKey(in(bob, s.shared))
			s.w.intentOf(in(bob, s.shared)).Answers = nil
		}, want: []string{kindLost}},
		{name: "a key a failover forgot after its answer, charge reported, money", claim: claimMoney, breakIt: func(s *shop) {
			// Everything the intent committed is gone, its client has its 201: the charge is
			// accounted for by no key, and reconciliation reports it. The money claim holds.
			w := s.w
			w.dropKey(alicePay1)
			w.ev.Journal = slices.DeleteFunc(w.ev.Journal, func(j journalRow) bool { return j.scope == alicePay1 })
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.ID == s.alicePay })
			inv := w.invoiceRow(s.aliceInv)
			inv.Paid, inv.Reserved = inv.Paid-2500, inv.Reserved-2500
			w.reconcile(s.aliceCharge)
		}, check: func(t *testing.T, v *verdict) {
			require.Equal(t, 1, v.forgotten)
			require.Equal(t, 1, v.unaccounted)
			require.Zero(t, v.unreported)
		}},
		{name: "a key a failover forgot, the same under the exact claim", claim: claimExact, breakIt: func(s *shop) {
			w := s.w
			w.dropKey(alicePay1)
			w.ev.Journal = slices.DeleteFunc(w.ev.Journal, func(j journalRow) bool { return j.scope == alicePay1 })
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.ID == s.alicePay })
			inv := w.invoiceRow(s.aliceInv)
			inv.Paid, inv.Reserved = inv.Paid-2500, inv.Reserved-2500
		}, want: []string{kindLost, kindChargeNotRecorded}},

		// Changed replays.
		{name: "a replay that differs by one byte from the first answer", claim: claimExact, breakIt: func(s *shop) {
			it := s.w.intentOf(in(alice, "alice-pay-0002"))
			it.Answers[1].Body += "\n"
		}, want: []string{kindChangedReplay}},
		{name: "a replay with members in another order", claim: claimExact, breakIt: func(s *shop) {
			it := s.w.intentOf(in(alice, "alice-pay-0002"))
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(it.Answers[1].Body), &m))
			b, err := json.Marshal(m) // sorted members: the same JSON value, not the same bytes
			require.NoError(t, err)
			require.NotEqual(t, it.Answers[1].Body, string(b))
			it.Answers[1].Body = string(b)
		}, want: []string{kindChangedReplay}},
		{name: "an answer the key does not store", claim: claimExact, breakIt: func(s *shop) {
			k := s.w.keyOf(in(bob, s.shared))
			k.Response.Body = json.RawMessage(`{"id":"inv_0006","amount":10000,"currency":"USD","paid":0,"status":"paid"}`)
		}, want: []string{kindChangedReplay}},
		{name: "a stored status that differs", claim: claimExact, breakIt: func(s *shop) {
			s.w.keyOf(in(bob, s.shared)).Response.Status = http.StatusOK
		}, want: []string{kindChangedReplay}},
		{name: "answers that differ in bytes only, money", claim: claimMoney, breakIt: func(s *shop) {
			it := s.w.intentOf(in(alice, "alice-pay-0002"))
			it.Answers[1].Body += "\n"
		}, check: func(t *testing.T, v *verdict) { require.Equal(t, 1, v.changedBytes) }},
		{name: "answers that name another charge, money", claim: claimMoney, breakIt: func(s *shop) {
			it := s.w.intentOf(in(alice, "alice-pay-0002"))
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(it.Answers[1].Body), &m))
			m["charge_id"] = "ch_other"
			b, _ := json.Marshal(m)
			it.Answers[1].Body = string(b)
		}, want: []string{kindChangedMoney}},

		{name: "a 201, then a 404 once a failover lost the invoice, money", claim: claimMoney, breakIt: func(s *shop) {
			// Invoice and payment were both committed in a loss window; the double click's other
			// request ran again on the new primary and found no invoice. The charge is the one
			// reconciliation reports; the answers differ, and name no second money.
			w := s.w
			sc := in(carol, "carol-pay-0003")
			invoice := field([]byte(w.intentOf(sc).Body), "invoice_id")
			w.ev.SettledFailed = nil
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.InvoiceID == invoice })
			w.ev.Invoices = slices.DeleteFunc(w.ev.Invoices, func(inv invoiceRow) bool { return inv.ID == invoice })
			w.dropKey(in(carol, "carol-inv-0002"))
			it := w.intentOf(sc)
			it.Double = true
			it.Answers = []answerRecord{
				{Status: http.StatusCreated, Body: fmt.Sprintf(`{"id":%q,"invoice_id":%q,"amount":700,"status":"succeeded","charge_id":"ch_window"}`, s.failedPay, invoice)},
				{Status: http.StatusNotFound, Body: `{"error":"not_found","message":"no such invoice"}`},
			}
			w.keyOf(sc).Response = &keyjson.Response{Status: http.StatusNotFound, Body: json.RawMessage(it.Answers[1].Body)}
			w.ev.Journal = slices.DeleteFunc(w.ev.Journal, func(j journalRow) bool { return j.scope == sc })
			w.ev.Charges = append(w.ev.Charges, gateway.Charge{ID: "ch_window", Amount: 700, Currency: "USD",
				Reference: paymentReference(s.failedPay), Status: gateway.StatusSucceeded})
			w.reconcile("ch_window")
		}, check: func(t *testing.T, v *verdict) {
			require.Equal(t, 1, v.changedBytes)
			require.Equal(t, 1, v.forgotten, "the invoice's key")
		}},
		{name: "a 201, then a 404 for an invoice that is there, money", claim: claimMoney, breakIt: func(s *shop) {
			it := s.w.intentOf(in(alice, "alice-pay-0002"))
			it.Answers[1] = answerRecord{Status: http.StatusNotFound, Body: `{"error":"not_found","message":"no such invoice"}`}
		}, want: []string{kindChangedMoney}},
		{name: "a first request answered as a replay of its own key (a lost answer to its commit)", claim: claimExact, breakIt: func(s *shop) {
			it := s.w.intentOf(in(bob, s.shared))
			it.FirstReplayed, it.Answers[0].Replayed = true, true
		}, check: func(t *testing.T, v *verdict) { require.Equal(t, 1, v.ownReplays) }},
		{name: "a first request answered as a replay of something else", claim: claimMoney, breakIt: func(s *shop) {
			it := s.w.intentOf(in(bob, s.shared))
			it.FirstReplayed, it.Answers[0].Replayed = true, true
			s.w.keyOf(in(bob, s.shared)).Response.Status = http.StatusOK
		}, want: []string{kindFirstReplayed, kindChangedMoney}},

		// Cross-scope replays.
		{name: "another tenant's stored answer under the same key string", claim: claimExact, breakIt: func(s *shop) {
			// Carol's first request under the key string alice used was answered with alice's
			// invoice: the key was looked up without its scope, and carol's was never made.
			w := s.w
			carolKey := in(carol, s.shared)
			alices := w.intentOf(in(alice, s.shared)).Answers[0]
			it := w.intentOf(carolKey)
			it.FirstReplayed = true
			it.Answers = []answerRecord{{Status: alices.Status, Body: alices.Body, Replayed: true}}
			w.dropKey(carolKey)
			w.ev.Invoices = slices.DeleteFunc(w.ev.Invoices, func(inv invoiceRow) bool { return inv.ID == s.carolInv })
			for _, k := range []string{"carol-pay-0001", "carol-pay-0002"} { // carol paid nothing on it then
				w.ev.Intents = slices.DeleteFunc(w.ev.Intents, func(r intentRecord) bool { return r.scope == in(carol, k) })
				w.dropKey(in(carol, k))
			}
			w.ev.Journal = slices.DeleteFunc(w.ev.Journal, func(j journalRow) bool { return j.Tenant == carol.Tenant && j.Key != "carol-pay-0003" })
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.InvoiceID == s.carolInv })
			w.ev.Charges = slices.DeleteFunc(w.ev.Charges, func(c gateway.Charge) bool { return c.Amount == 4000 || c.Amount == 6000 })
		}, want: []string{kindCrossScope, kindFirstReplayed, kindLost}},
		{name: "another actor's stored answer under the same key string, on a retry", claim: claimExact, breakIt: func(s *shop) {
			w := s.w
			alices := w.intentOf(in(alice, s.shared)).Answers[0]
			it := w.intentOf(in(bob, s.shared))
			it.Answers = append(it.Answers, answerRecord{Status: alices.Status, Body: alices.Body, Replayed: true})
		}, want: []string{kindCrossScope}},
		{name: "another tenant's stored answer, money", claim: claimMoney, breakIt: func(s *shop) {
			w := s.w
			alices := w.intentOf(in(alice, s.shared)).Answers[0]
			it := w.intentOf(in(carol, s.shared))
			it.Answers = append(it.Answers, answerRecord{Status: alices.Status, Body: alices.Body, Replayed: true})
		}, want: []string{kindCrossScope}},
		{name: "two intents of one actor answered with one payment", claim: claimExact, breakIt: func(s *shop) {
			it := s.w.intentOf(in(alice, "alice-pay-0002"))
			first := s.w.intentOf(alicePay1).Answers[0]
			it.Answers[1] = answerRecord{Status: first.Status, Body: first.Body, Replayed: true}
		}, want: []string{kindSharedResource, kindChangedReplay, kindDoubleCharge}},

		// Books and answers against the ledger and the tables.
		{name: "an invoice paid more than its payments", claim: claimExact, breakIt: func(s *shop) {
			inv := s.w.invoiceRow(s.aliceInv)
			inv.Paid += 100
			inv.Reserved += 100
		}, want: []string{kindBooks}},
		{name: "an invoice with a reservation left", claim: claimMoney, breakIt: func(s *shop) {
			s.w.invoiceRow(s.aliceInv).Reserved += 700
		}, want: []string{kindBooks}},
		{name: "a paid invoice still open", claim: claimExact, breakIt: func(s *shop) {
			s.w.invoiceRow(s.carolInv).Status = "open"
		}, want: []string{kindBooks}},
		{name: "a 201 without its charge", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Charges = slices.DeleteFunc(s.w.ev.Charges, func(c gateway.Charge) bool { return c.ID == s.aliceCharge })
		}, want: []string{kindNoCharge}},
		{name: "a 201 whose charge was declined", claim: claimMoney, breakIt: func(s *shop) {
			s.w.ev.Charges[0].Status = gateway.StatusDeclined
		}, want: []string{kindNoCharge}},
		{name: "a 201 without its payment", claim: claimExact, breakIt: func(s *shop) {
			w := s.w
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.ID == s.alicePay })
			inv := w.invoiceRow(s.aliceInv)
			inv.Paid, inv.Reserved = inv.Paid-2500, inv.Reserved-2500
		}, want: []string{kindNoPayment, kindChargeNotRecorded}},
		{name: "a 201 whose payment is still pending", claim: claimExact, breakIt: func(s *shop) {
			w := s.w
			p := w.paymentRow(s.alicePay)
			p.Status, p.ChargeID = "pending", ""
			w.invoiceRow(s.aliceInv).Paid -= 2500
		}, want: []string{kindNoPayment, kindChargeNotRecorded, kindPaymentPending, kindBooks}},
		{name: "a payment no answer names", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Payments = append(s.w.ev.Payments, paymentRow{ID: "pay_nobody", Tenant: "chaos", InvoiceID: s.aliceInv, Amount: 100, Status: "failed"})
		}, want: []string{kindPaymentUnnamed}},
		{name: "a charge no intent names", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_orphan", Amount: 100, Currency: "USD",
				Reference: paymentReference("pay_orphan"), Status: gateway.StatusSucceeded})
		}, want: []string{kindChargeNoIntent, kindChargeNotRecorded}},
		{name: "a payment settled failed that was charged", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Charges = append(s.w.ev.Charges, gateway.Charge{ID: "ch_late", Amount: 700, Currency: "USD",
				Reference: paymentReference(s.failedPay), Status: gateway.StatusSucceeded})
		}, want: []string{kindSettledCharged, kindChargeNotRecorded}},
		{name: "a 402 payment_failed the operator did not decide", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.SettledFailed = nil
		}, want: []string{kindUnexpectedAnswer}},
		{name: "a payment refused as not found, its invoice there", claim: claimMoney, breakIt: func(s *shop) {
			it := s.w.intentOf(in(carol, "carol-pay-0003"))
			body := `{"error":"not_found","message":"no such invoice"}`
			it.Answers[0] = answerRecord{Status: http.StatusNotFound, Body: body}
			s.w.keyOf(in(carol, "carol-pay-0003")).Response = &keyjson.Response{Status: http.StatusNotFound, Body: json.RawMessage(body)}
			s.w.ev.SettledFailed = nil
			s.w.ev.Payments = slices.DeleteFunc(s.w.ev.Payments, func(p paymentRow) bool { return p.Status == "failed" })
		}, want: []string{kindUnexpectedAnswer}},
		{name: "a payment refused as not found, its invoice lost by a failover, money", claim: claimMoney, breakIt: func(s *shop) {
			w := s.w
			sc := in(carol, "carol-pay-0003")
			body := `{"error":"not_found","message":"no such invoice"}`
			w.intentOf(sc).Answers[0] = answerRecord{Status: http.StatusNotFound, Body: body}
			w.keyOf(sc).Response = &keyjson.Response{Status: http.StatusNotFound, Body: json.RawMessage(body)}
			w.ev.SettledFailed = nil
			invoice := field([]byte(w.intentOf(sc).Body), "invoice_id")
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.InvoiceID == invoice })
			w.ev.Invoices = slices.DeleteFunc(w.ev.Invoices, func(inv invoiceRow) bool { return inv.ID == invoice })
			w.dropKey(in(carol, "carol-inv-0002")) // the invoice's key went with it; its client had the 201
		}, check: func(t *testing.T, v *verdict) { require.Equal(t, 1, v.forgotten) }},

		{name: "a payment charged, then refused as not found once a failover lost its invoice, reported, money", claim: claimMoney, breakIt: func(s *shop) {
			// The invoice and the payment's first execution were committed in the loss window:
			// the charge went out, the failover lost both, and the client's retry found no
			// invoice. The charge belongs to the intent by its derived id; no key accounts for it;
			// reconciliation reports it.
			w := s.w
			inv := w.invoice(in(bob, "bob-inv-0002"), 10000)
			w.dropKey(in(bob, "bob-inv-0002"))
			w.ev.Invoices = slices.DeleteFunc(w.ev.Invoices, func(r invoiceRow) bool { return r.ID == inv })
			sc := in(bob, "bob-pay-0002")
			body := `{"error":"not_found","message":"no such invoice"}`
			w.intent(sc, "payment", fmt.Sprintf(`{"invoice_id":%q,"amount":900}`, inv), payments.OpCreatePayment, http.StatusNotFound, body)
			w.ev.Charges = append(w.ev.Charges, gateway.Charge{ID: "ch_lost", Amount: 900, Currency: "USD",
				Reference: paymentReference(intentPaymentID(sc)), Status: gateway.StatusSucceeded})
			w.reconcile("ch_lost")
		}, check: func(t *testing.T, v *verdict) {
			require.Equal(t, 1, v.forgotten)
			require.Equal(t, 1, v.unaccounted)
		}},
		{name: "the same, not reported, money", claim: claimMoney, breakIt: func(s *shop) {
			w := s.w
			inv := w.invoice(in(bob, "bob-inv-0002"), 10000)
			w.dropKey(in(bob, "bob-inv-0002"))
			w.ev.Invoices = slices.DeleteFunc(w.ev.Invoices, func(r invoiceRow) bool { return r.ID == inv })
			sc := in(bob, "bob-pay-0002")
			body := `{"error":"not_found","message":"no such invoice"}`
			w.intent(sc, "payment", fmt.Sprintf(`{"invoice_id":%q,"amount":900}`, inv), payments.OpCreatePayment, http.StatusNotFound, body)
			w.ev.Charges = append(w.ev.Charges, gateway.Charge{ID: "ch_lost", Amount: 900, Currency: "USD",
				Reference: paymentReference(intentPaymentID(sc)), Status: gateway.StatusSucceeded})
		}, want: []string{kindUnreported}},

		// Reconciliation.
		{name: "a forgotten charge reconciliation does not report, money", claim: claimMoney, breakIt: func(s *shop) {
			w := s.w
			w.dropKey(alicePay1)
			w.ev.Journal = slices.DeleteFunc(w.ev.Journal, func(j journalRow) bool { return j.scope == alicePay1 })
			w.ev.Payments = slices.DeleteFunc(w.ev.Payments, func(p paymentRow) bool { return p.ID == s.alicePay })
			inv := w.invoiceRow(s.aliceInv)
			inv.Paid, inv.Reserved = inv.Paid-2500, inv.Reserved-2500
		}, want: []string{kindUnreported}, check: func(t *testing.T, v *verdict) {
			require.Equal(t, 1, v.unreported)
			require.Equal(t, 1, v.forgotten)
		}},
		{name: "reconciliation not run, money", claim: claimMoney, breakIt: func(s *shop) {
			s.w.ev.Reconcile = nil
		}, want: []string{kindNoReconcile}},
		{name: "reconciliation reports a charge a completed key accounts for", claim: claimMoney, breakIt: func(s *shop) {
			s.w.reconcile(s.aliceCharge)
		}, want: []string{kindFalseReport}},
		{name: "reconciliation, run under the exact claim, reports nothing: clean", claim: claimExact, breakIt: func(s *shop) {
			s.w.reconcile()
		}},

		// The run's own incidents.
		{name: "a serve that exited on its own", claim: claimExact, breakIt: func(s *shop) {
			s.w.ev.Incidents = append(s.w.ev.Incidents, incident{Kind: "process exited on its own", Text: "serve-1 (pid 42) exited"})
		}, want: []string{"process exited on its own"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newShop(tc.claim)
			if tc.breakIt != nil {
				tc.breakIt(s)
			}
			v := judge(s.w.ev)
			kinds := map[string]bool{}
			for _, vi := range v.violations {
				kinds[vi.kind] = true
			}
			require.ElementsMatch(t, tc.want, slices.Collect(maps.Keys(kinds)), "kinds of violation found; the verdict:\n%s", v)
			require.Equal(t, len(tc.want) == 0, v.pass())
			if tc.check != nil {
				tc.check(t, v)
			}
		})
	}
}

// TestJudgeCleanFigures checks the figures of the clean run: nothing lost, charged twice,
// forgotten or unaccounted, under either claim.
func TestJudgeCleanFigures(t *testing.T) {
	t.Parallel()
	for _, c := range []claim{claimExact, claimMoney} {
		v := judge(newShop(c).w.ev)
		require.True(t, v.pass(), "%s", v)
		require.Equal(t, verdict{}, *v)
	}
}

// TestEvidenceRoundTrip: evidence written to a file and read back is judged the same, and an
// answer's bytes survive (whitespace, member order, characters JSON escapes).
func TestEvidenceRoundTrip(t *testing.T) {
	t.Parallel()
	s := newShop(claimExact)
	it := s.w.intentOf(in(alice, "alice-pay-0002"))
	it.Answers[1].Body = "{\"b\": 1,  \"a\":\"<&>\"}\n"
	path := filepath.Join(t.TempDir(), "evidence.json")
	require.NoError(t, writeEvidence(path, s.w.ev))
	back, err := readEvidence(path)
	require.NoError(t, err)
	require.Equal(t, it.Answers[1].Body, back.Intents[slices.IndexFunc(back.Intents, func(r intentRecord) bool { return r.scope == it.scope })].Answers[1].Body)
	require.Equal(t, judge(s.w.ev).String(), judge(back).String())
	require.False(t, judge(back).pass())
}
