package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/pgsaga/pgsaga/gateway"
)

// violation is one broken promise, with what the judge knows about it.
type violation struct {
	kind string // one of the kind constants below, or an incident's kind
	// key is the intent's scope, when there is one.
	key  scope
	text string
}

// The kinds of violation the judge finds.
const (
	kindDoubleCharge      = "double charge"
	kindChargeNoIntent    = "charge for no intent"
	kindChargeNotRecorded = "charge not recorded"
	kindLost              = "lost intent"
	kindChangedReplay     = "changed replay"
	kindChangedMoney      = "answers differ in money"
	kindCrossScope        = "cross-scope replay"
	kindSharedResource    = "one resource, two intents"
	kindFirstReplayed     = "first request answered as a replay"
	kindNoCharge          = "201 without its one charge"
	kindNoPayment         = "201 without its payment"
	kindSettledCharged    = "settled failed but charged"
	kindSettledNotFailed  = "settled failed, payment not failed"
	kindUnexpectedAnswer  = "unexpected answer"
	kindPaymentPending    = "payment left pending"
	kindPaymentUnnamed    = "payment no answer names"
	kindBooks             = "invoice books"
	kindNoReconcile       = "reconciliation not run"
	kindUnreported        = "charge not reported by reconciliation"
	kindFalseReport       = "reconciliation reported an accounted charge"
	kindNotDerived        = "payment id not derived from its intent"
)

// verdict is the judge's finding on one run.
type verdict struct {
	violations []violation
	// lost counts the intents sent and not finished: no completed key, or no answer.
	lost int
	// doubleCharges counts the references, and the intents, charged more than once.
	doubleCharges int
	// forgotten counts, under claimMoney, the intents answered whose key is gone after the drain
	// (a failover lost its commits after its client had the answer).
	forgotten int
	// unaccounted counts the charges no completed key accounts for; unreported those of them
	// reconciliation did not report.
	unaccounted, unreported int
	// changedBytes counts, under claimMoney, the intents whose answers differ but not in the money
	// they name (a re-execution after a lost commit), or differ because the invoice they pay
	// was lost (a 404 after a 201).
	changedBytes int
	// ownReplays counts the first requests answered as a replay of their own key's response.
	ownReplays int
}

func (v *verdict) pass() bool { return len(v.violations) == 0 }

// String is the verdict alone, as -judge prints it.
func (v *verdict) String() string {
	var b strings.Builder
	if v.pass() {
		b.WriteString("PASS\n")
	} else {
		fmt.Fprintf(&b, "FAIL (%d violations)\n", len(v.violations))
	}
	fmt.Fprintf(&b, "  double charges %d, lost intents %d, forgotten keys %d, unaccounted charges %d (%d unreported), answers changed %d, own replays %d\n",
		v.doubleCharges, v.lost, v.forgotten, v.unaccounted, v.unreported, v.changedBytes, v.ownReplays)
	for _, vi := range v.violations {
		fmt.Fprintf(&b, "  %s: %s\n", vi.kind, vi.text)
	}
	return b.String()
}

// judge checks the evidence against its claim and returns every violation found, with the
// figures. It reads nothing but ev.
func judge(ev *evidence) *verdict {
	j := newJudging(ev)
	j.indexReferences()
	j.checkIntents()
	j.checkCharges()
	j.checkPayments()
	j.checkBooks()
	j.checkReconciliation()
	for _, in := range ev.Incidents {
		j.add(in.Kind, scope{}, "%s", in.Text)
	}
	for _, v := range j.v.violations {
		switch v.kind {
		case kindLost:
			j.v.lost++
		case kindDoubleCharge:
			j.v.doubleCharges++
		}
	}
	return j.v
}

// judging is the evidence indexed for the checks.
type judging struct {
	ev *evidence
	v  *verdict

	keys          map[scope]cliKey
	keysByString  map[string][]cliKey // by key string, every scope's
	intents       map[scope]*intentRecord
	charges       map[string][]gateway.Charge // by reference, in creation order
	payments      map[string]paymentRow
	invoices      map[string]invoiceRow
	settledFailed map[scope]bool
	// owners are the intents each reference belongs to: the payment derived from the intent, the
	// payment its answers name, the references its key's journal holds.
	owners map[string]map[scope]bool
	// refsOf is owners the other way: each intent's references.
	refsOf map[scope]map[string]bool
	// journaled are, by reference, the keys whose journal holds it, each with the provider ids
	// it recorded under it.
	journaled map[string]map[scope][]string
	// named are the payment ids some answer names.
	named map[string]bool
}

func newJudging(ev *evidence) *judging {
	j := &judging{ev: ev, v: &verdict{}, keys: map[scope]cliKey{}, keysByString: map[string][]cliKey{},
		intents: map[scope]*intentRecord{}, charges: map[string][]gateway.Charge{}, payments: map[string]paymentRow{},
		invoices: map[string]invoiceRow{}, settledFailed: map[scope]bool{}, owners: map[string]map[scope]bool{},
		refsOf: map[scope]map[string]bool{}, journaled: map[string]map[scope][]string{}, named: map[string]bool{}}
	for _, k := range ev.Keys {
		j.keys[k.scope()] = k
		j.keysByString[k.Key.Key] = append(j.keysByString[k.Key.Key], k)
	}
	for i := range ev.Intents {
		j.intents[ev.Intents[i].scope] = &ev.Intents[i]
	}
	for _, c := range ev.Charges {
		j.charges[c.Reference] = append(j.charges[c.Reference], c)
	}
	for _, p := range ev.Payments {
		j.payments[p.ID] = p
	}
	for _, inv := range ev.Invoices {
		j.invoices[inv.ID] = inv
	}
	for _, sc := range ev.SettledFailed {
		j.settledFailed[sc] = true
	}
	return j
}

func (j *judging) add(kind string, key scope, format string, args ...any) {
	j.v.violations = append(j.v.violations, violation{kind: kind, key: key, text: fmt.Sprintf(format, args...)})
}

// completed reports whether the key in sc is completed.
func (j *judging) completed(sc scope) bool {
	k, ok := j.keys[sc]
	return ok && k.State == "completed"
}

// paymentReference is the reference of payment id's charge.
func paymentReference(id string) string { return gateway.DeriveKey("payment", id) }

// indexReferences builds the owners of every reference and the keys that journaled it.
func (j *judging) indexReferences() {
	own := func(ref string, sc scope) {
		if j.owners[ref] == nil {
			j.owners[ref] = map[scope]bool{}
		}
		if j.refsOf[sc] == nil {
			j.refsOf[sc] = map[string]bool{}
		}
		j.owners[ref][sc], j.refsOf[sc][ref] = true, true
	}
	for _, it := range j.ev.Intents {
		if it.Kind != "payment" {
			continue
		}
		own(paymentReference(intentPaymentID(it.scope)), it.scope)
		for _, a := range it.Answers {
			if id := paymentOf(a.Status, []byte(a.Body)); id != "" {
				own(paymentReference(id), it.scope)
				j.named[id] = true
			}
		}
	}
	for _, row := range j.ev.Journal {
		if _, ok := j.intents[row.scope]; ok {
			own(row.Reference, row.scope)
		}
		if j.journaled[row.Reference] == nil {
			j.journaled[row.Reference] = map[scope][]string{}
		}
		ids := j.journaled[row.Reference][row.scope]
		if row.ProviderID != "" {
			ids = append(ids, row.ProviderID)
		}
		j.journaled[row.Reference][row.scope] = ids
	}
}

// accountedFor reports whether a key accounts for charge c, as reconciliation decides: a key
// that journaled c's reference and is not completed (still in pgsaga's or an operator's hands),
// or is completed having recorded c's id, or no id, under it.
func (j *judging) accountedFor(c gateway.Charge) bool {
	for sc, ids := range j.journaled[c.Reference] {
		if !j.completed(sc) || len(ids) == 0 || slices.Contains(ids, c.ID) {
			return true
		}
	}
	return false
}

// paymentOf is the payment id an answer to a payment names: the id of a 201, the payment_id of
// a 402; "" for any other answer.
func paymentOf(status int, body []byte) string {
	switch status {
	case http.StatusCreated:
		return field(body, "id")
	case http.StatusPaymentRequired:
		return field(body, "payment_id")
	}
	return ""
}

// resourceOf is the id of what an answer says the intent made: the invoice of an invoice's
// 201, the payment of a payment's 201 or 402; "" for any other answer.
func resourceOf(kind string, status int, body []byte) string {
	if kind == "invoice" {
		if status == http.StatusCreated {
			return field(body, "id")
		}
		return ""
	}
	return paymentOf(status, body)
}

// checkIntents checks each intent the clients sent: finished, its answers the same and those its key
// stores (none another scope's), and each answer true to the ledger and the tables.
func (j *judging) checkIntents() {
	resources := map[string]map[scope]bool{} // what each answer says its intent made
	for i := range j.ev.Intents {
		it := &j.ev.Intents[i]
		if !it.Sent {
			continue // never left the client: no key, nothing to check
		}
		if it.FirstReplayed {
			j.firstReplayed(it)
		}
		for _, a := range it.Answers {
			if id := resourceOf(it.Kind, a.Status, []byte(a.Body)); id != "" {
				if resources[id] == nil {
					resources[id] = map[scope]bool{}
				}
				resources[id][it.scope] = true
			}
		}
		if !j.finished(it) {
			continue
		}
		j.answers(it)
		j.firstAnswer(it)
		j.intentCharges(it)
	}
	for _, id := range slices.Sorted(maps.Keys(resources)) {
		owners := slices.SortedFunc(maps.Keys(resources[id]), func(a, b scope) int { return strings.Compare(a.String(), b.String()) })
		if len(owners) < 2 {
			continue
		}
		kind := kindSharedResource
		for _, o := range owners[1:] {
			if o.Tenant != owners[0].Tenant || o.Actor != owners[0].Actor {
				kind = kindCrossScope
			}
		}
		j.add(kind, owners[0], "%s is named by the answers of %d intents: %v", id, len(owners), owners)
	}
}

// firstReplayed judges a first request answered as a replay. Answered with what its own key
// stores, it is a serve that lost the answer to its own commit (the database went away during
// COMMIT), tried again and found the key completed: counted, no violation. Answered with anything
// else, the key it replayed is not its own.
func (j *judging) firstReplayed(it *intentRecord) {
	k, ok := j.keys[it.scope]
	if len(it.Answers) > 0 {
		a := it.Answers[0]
		if ok && k.State == "completed" && k.Response != nil && k.Response.Status == a.Status && sameJSON(k.Response.Body, []byte(a.Body)) {
			j.v.ownReplays++
			return
		}
	}
	j.add(kindFirstReplayed, it.scope, "%s %s: the request that started the key was answered with Idempotent-Replayed: true, and not with what its key stores (%s)",
		it.Kind, it.scope, storedString(k))
}

// finished checks that the intent was finished: its key completed and an answer got. Under
// claimMoney an answered intent whose key is gone was forgotten by a failover, which is no
// violation by itself (reconciliation must report its charge). It reports whether the intent's
// answers are to be checked.
func (j *judging) finished(it *intentRecord) bool {
	k, ok := j.keys[it.scope]
	switch {
	case !ok && len(it.Answers) > 0 && j.ev.Claim == claimMoney:
		j.v.forgotten++
		return true
	case !ok:
		j.add(kindLost, it.scope, "%s %s: sent, but no key in the database (%d answers)", it.Kind, it.scope, len(it.Answers))
	case k.State != "completed":
		j.add(kindLost, it.scope, "%s %s: key %s at %s after the drain (attempts %d, last error %q)", it.Kind, it.scope, k.State, k.RecoveryPoint, k.Attempts, orEmpty(k.LastError))
	case len(it.Answers) == 0:
		j.add(kindLost, it.scope, "%s %s: completed, but the client never got a definitive answer", it.Kind, it.scope)
	default:
		return true
	}
	return false
}

// answers checks that every answer to the intent is the first one, byte for byte, and what its
// key stores (claimExact), or names the same money (claimMoney); an answer that is another
// scope's stored response under the same key string is a cross-scope replay.
func (j *judging) answers(it *intentRecord) {
	first := it.Answers[0]
	changed := false
	for _, a := range it.Answers[1:] {
		if a.Status == first.Status && a.Body == first.Body {
			continue
		}
		if other, ok := j.otherScopeStores(it, a); ok {
			j.add(kindCrossScope, it.scope, "%s %s: answered %d %s, the stored response of %s", it.Kind, it.scope, a.Status, a.Body, other)
			continue
		}
		if j.ev.Claim == claimMoney && j.sameMoney(it, first.Status, []byte(first.Body), a.Status, []byte(a.Body)) {
			changed = true
			continue
		}
		kind := kindChangedReplay
		if j.ev.Claim == claimMoney {
			kind = kindChangedMoney
		}
		j.add(kind, it.scope, "%s %s: answered %d %s, then %d %s", it.Kind, it.scope, first.Status, first.Body, a.Status, a.Body)
	}
	k, ok := j.keys[it.scope]
	if !ok {
		if changed {
			j.v.changedBytes++
		}
		return // forgotten (claimMoney): nothing stored to compare with
	}
	for _, a := range it.Answers {
		if k.Response != nil && k.Response.Status == a.Status && sameJSON(k.Response.Body, []byte(a.Body)) {
			continue
		}
		if other, ok := j.otherScopeStores(it, a); ok {
			j.add(kindCrossScope, it.scope, "%s %s: answered %d %s, the stored response of %s (its own key stores %s)", it.Kind, it.scope, a.Status, a.Body, other, storedString(k))
			break
		}
		if j.ev.Claim == claimMoney && k.Response != nil && j.sameMoney(it, k.Response.Status, k.Response.Body, a.Status, []byte(a.Body)) {
			changed = true
			continue
		}
		kind := kindChangedReplay
		if j.ev.Claim == claimMoney {
			kind = kindChangedMoney
		}
		j.add(kind, it.scope, "%s %s: answered %d %s, the key stores %s", it.Kind, it.scope, a.Status, a.Body, storedString(k))
		break
	}
	if changed {
		j.v.changedBytes++
	}
}

// sameMoney reports whether two answers to it agree on money, as the money claim needs: they
// name the same status, ids and amounts; or one is a 404 not_found for a payment whose invoice
// is gone (a failover lost the invoice's commit, and a re-execution found no invoice), which
// names no money: the charge the other names is reconciliation's to report.
func (j *judging) sameMoney(it *intentRecord, s1 int, b1 []byte, s2 int, b2 []byte) bool {
	if moneyOf(it.Kind, s1, b1) == moneyOf(it.Kind, s2, b2) {
		return true
	}
	notFound := func(status int, body []byte) bool {
		return status == http.StatusNotFound && field(body, "error") == "not_found"
	}
	return it.Kind == "payment" && (notFound(s1, b1) || notFound(s2, b2)) && j.invoiceLost(it)
}

// otherScopeStores finds a key of another scope, under the same key string, whose stored
// response is answer a.
func (j *judging) otherScopeStores(it *intentRecord, a answerRecord) (scope, bool) {
	for _, k := range j.keysByString[it.Key] {
		if k.scope() != it.scope && k.Response != nil && k.Response.Status == a.Status && sameJSON(k.Response.Body, []byte(a.Body)) {
			return k.scope(), true
		}
	}
	return scope{}, false
}

func storedString(k cliKey) string {
	if k.Response == nil {
		return "no response"
	}
	body, err := canonicalBytes(k.Response.Body)
	if err != nil {
		body = k.Response.Body
	}
	return fmt.Sprintf("%d %s", k.Response.Status, body)
}

// firstAnswer checks the intent's first answer against the ledger and the tables: a payment's
// 201 has its one succeeded charge and its succeeded payment; a 402 payment_failed was settled
// so by the operator and charged nothing.
func (j *judging) firstAnswer(it *intentRecord) {
	first := it.Answers[0]
	body := []byte(first.Body)
	completed := j.completed(it.scope)
	if id := paymentOf(first.Status, body); it.Kind == "payment" && id != "" && j.ev.Claim == claimMoney && id != intentPaymentID(it.scope) {
		// A re-execution after a lost commit would make another payment, charged under another
		// reference: the money claim rests on ids derived from the intent.
		j.add(kindNotDerived, it.scope, "payment %s answered with payment %s; the id derived from the intent is %s", it.scope, id, intentPaymentID(it.scope))
	}
	switch {
	case it.Kind == "invoice" && first.Status == http.StatusCreated:
	case it.Kind == "payment" && first.Status == http.StatusCreated:
		id, chargeID := field(body, "id"), field(body, "charge_id")
		charges := j.charges[paymentReference(id)]
		if len(charges) != 1 || charges[0].ID != chargeID || charges[0].Status != gateway.StatusSucceeded {
			j.add(kindNoCharge, it.scope, "payment %s answered 201 with charge %s; the ledger holds for its reference: %s", id, chargeID, chargeList(charges))
		}
		// A payment forgotten with its key (claimMoney), or with its invoice (the key then
		// stores a 404), is gone with it: reconciliation reports its charge.
		p, ok := j.payments[id]
		required := ok || completed
		if j.ev.Claim == claimMoney && !ok {
			k := j.keys[it.scope]
			required = completed && k.Response != nil && paymentOf(k.Response.Status, k.Response.Body) == id
		}
		if required && (p.Status != "succeeded" || p.ChargeID != chargeID) {
			j.add(kindNoPayment, it.scope, "payment %s answered 201 with charge %s; the payments table holds %+v", id, chargeID, p)
		}
	case it.Kind == "payment" && first.Status == http.StatusPaymentRequired && field(body, "error") == "payment_failed" && j.settledFailed[it.scope]:
		id := field(body, "payment_id")
		if charges := j.charges[paymentReference(id)]; len(charges) > 0 {
			j.add(kindSettledCharged, it.scope, "payment %s was settled failed; the ledger holds %s", id, chargeList(charges))
		}
		if p := j.payments[id]; p.Status != "failed" {
			j.add(kindSettledNotFailed, it.scope, "payment %s was settled failed; the payments table holds %+v", id, p)
		}
	case it.Kind == "payment" && first.Status == http.StatusNotFound && j.ev.Claim == claimMoney && j.invoiceLost(it):
		// The invoice it pays was made by a commit a failover lost: not found, and rightly so.
	default:
		j.add(kindUnexpectedAnswer, it.scope, "%s %s: answered %d %s", it.Kind, it.scope, first.Status, first.Body)
	}
}

// invoiceLost reports whether the invoice a payment intent pays is not in the invoices table.
func (j *judging) invoiceLost(it *intentRecord) bool {
	_, ok := j.invoices[field([]byte(it.Body), "invoice_id")]
	return !ok
}

// intentCharges checks that the intent's charges, under every reference it owns, are at most
// one: a second execution that made a new payment (a new reference) charges twice.
func (j *judging) intentCharges(it *intentRecord) {
	var refs []string
	var all []gateway.Charge
	for _, ref := range slices.Sorted(maps.Keys(j.refsOf[it.scope])) {
		if cs := j.charges[ref]; len(cs) > 0 {
			refs = append(refs, ref)
			all = append(all, cs...)
		}
	}
	if len(refs) > 1 {
		j.add(kindDoubleCharge, it.scope, "%s %s was charged %d times under %d references %v: %s", it.Kind, it.scope, len(all), len(refs), refs, chargeList(all))
	}
}

// checkCharges checks every charge of the ledger: its reference charged once, owned by one intent
// of the run, and recorded by a succeeded payment when a completed key accounts for it.
func (j *judging) checkCharges() {
	for _, ref := range slices.Sorted(maps.Keys(j.charges)) {
		cs := j.charges[ref]
		owner := j.owner(ref)
		if len(cs) > 1 {
			j.add(kindDoubleCharge, owner, "reference %s was charged %d times: %s", ref, len(cs), chargeList(cs))
		}
		if len(j.owners[ref]) == 0 {
			j.add(kindChargeNoIntent, scope{}, "reference %s was charged (%s) and no intent of the run names it", ref, chargeList(cs))
		}
	}
	for _, c := range j.ev.Charges {
		if !j.accountedFor(c) {
			j.v.unaccounted++
			if j.ev.Claim == claimExact {
				j.add(kindChargeNotRecorded, j.owner(c.Reference), "charge %s (%s, %s) is accounted for by no completed key", c.ID, c.Reference, c.Status)
			}
			continue
		}
		id, _ := strings.CutPrefix(c.Reference, "payment:")
		if p := j.payments[id]; p.Status != "succeeded" || p.ChargeID != c.ID {
			j.add(kindChargeNotRecorded, j.owner(c.Reference), "charge %s (%s, %s) has no succeeded payment recording it; the payments table holds %+v", c.ID, c.Reference, c.Status, p)
		}
	}
}

// owner is the first intent that owns ref; zero when none does.
func (j *judging) owner(ref string) scope {
	owners := slices.SortedFunc(maps.Keys(j.owners[ref]), func(a, b scope) int { return strings.Compare(a.String(), b.String()) })
	if len(owners) == 0 {
		return scope{}
	}
	return owners[0]
}

// checkPayments checks that no payment is left pending and that each is named by an answer.
func (j *judging) checkPayments() {
	for _, p := range j.ev.Payments {
		if p.Status == "pending" {
			j.add(kindPaymentPending, j.owner(paymentReference(p.ID)), "payment %s is still pending after the drain", p.ID)
		}
		if !j.named[p.ID] {
			j.add(kindPaymentUnnamed, j.owner(paymentReference(p.ID)), "payment %s (%s) is named by no intent's answer", p.ID, p.Status)
		}
	}
}

// checkBooks checks each invoice: paid is the sum of its succeeded payments, nothing is reserved
// beyond it, and it is paid exactly when paid reaches its amount.
func (j *judging) checkBooks() {
	paid := map[string]int64{}
	for _, p := range j.ev.Payments {
		if p.Status == "succeeded" {
			paid[p.InvoiceID] += p.Amount
		}
	}
	for _, inv := range j.ev.Invoices {
		wantStatus := "open"
		if inv.Paid == inv.Amount {
			wantStatus = "paid"
		}
		if inv.Paid != paid[inv.ID] || inv.Reserved != inv.Paid || inv.Status != wantStatus {
			j.add(kindBooks, scope{}, "invoice %s: paid %d, reserved %d, status %s; its succeeded payments sum to %d", inv.ID, inv.Paid, inv.Reserved, inv.Status, paid[inv.ID])
		}
	}
}

// checkReconciliation checks reconciliation's report against the ledger: every charge no completed
// key accounts for is in it, and nothing else is. Under claimMoney the report is required.
func (j *judging) checkReconciliation() {
	rec := j.ev.Reconcile
	if rec == nil {
		if j.ev.Claim == claimMoney {
			j.add(kindNoReconcile, scope{}, "the run did not run reconciliation, which its claim needs")
		}
		return
	}
	reported := map[string]bool{}
	for _, u := range rec.Unmatched {
		reported[u.ProviderID] = true
	}
	for _, c := range j.ev.Charges {
		accounted := j.accountedFor(c)
		switch {
		case !accounted && !reported[c.ID]:
			j.v.unreported++
			j.add(kindUnreported, j.owner(c.Reference), "charge %s (%s, %s %d %s) is accounted for by no completed key and not in reconciliation's report",
				c.ID, c.Reference, c.Status, c.Amount, c.Currency)
		case accounted && reported[c.ID]:
			j.add(kindFalseReport, j.owner(c.Reference), "reconciliation reported charge %s (%s), which a completed key accounts for", c.ID, c.Reference)
		}
	}
}

// moneyOf is what an answer says about money, for comparing two answers under claimMoney: its
// status and error code, and the ids and amounts it names.
func moneyOf(kind string, status int, body []byte) string {
	parts := []string{kind, fmt.Sprint(status)}
	for _, name := range []string{"error", "id", "payment_id", "invoice_id", "charge_id", "amount", "currency", "status"} {
		parts = append(parts, name+"="+fieldString(body, name))
	}
	return strings.Join(parts, " ")
}

// fieldString is one member of a JSON body as JSON text, or "".
func fieldString(body []byte, name string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	return string(m[name])
}

// sameJSON compares a stored body as the CLI prints it (re-encoded: compact, HTML-escaped)
// with an answer's bytes: equal once both are so encoded, so member order, spelling of numbers
// and strings must be the same. A body that is not JSON is compared as it is.
func sameJSON(stored, answer []byte) bool {
	a, errA := canonicalBytes(stored)
	b, errB := canonicalBytes(answer)
	if errA != nil || errB != nil {
		return bytes.Equal(stored, answer)
	}
	return bytes.Equal(a, b)
}

func canonicalBytes(b []byte) ([]byte, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil {
		return nil, err
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes(), nil
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
