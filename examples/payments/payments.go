package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Payment is one attempt to pay (part of) an invoice.
type Payment struct {
	ID        string  `json:"id"`
	InvoiceID string  `json:"invoice_id"`
	Amount    int64   `json:"amount"`
	Status    string  `json:"status"`
	ChargeID  *string `json:"charge_id"`
}

// PaymentHook runs inside the transaction that records a payment's result, so that what it
// writes (an outbox event) commits exactly when the result does.
type PaymentHook func(ctx context.Context, tx pgx.Tx, tenant string, p *Payment) error

type createPaymentParams struct {
	InvoiceID string          `json:"invoice_id"`
	Amount    json.RawMessage `json:"amount"`
}

func parseCreatePayment(body []byte) (string, int64, error) {
	var p createPaymentParams
	if err := decodeStrict(body, &p); err != nil {
		return "", 0, err
	}
	if p.InvoiceID == "" {
		return "", 0, errors.New("invoice_id is required")
	}
	amount, err := positiveAmount("amount", p.Amount)
	return p.InvoiceID, amount, err
}

// The values create_payment's steps save for the steps after them.
var (
	pendingPayment = phases.Value[PendingPayment]("payment")
	chargeResult   = phases.Value[gateway.Charge]("charge")
)

// createPayment is the phased operation behind POST /payments: reserve the amount and create
// the payment row, charge the gateway with the derived key payment:<id>, record the result. An
// operator settles a payment parked with an unknowable outcome (SettlePayment).
//
// The payment's id derives from the intent (run.IntentID), and so does the charge's key: an
// execution that runs again after a database failover lost the first one's commits makes the
// same payment and sends the same key, which the provider answers with the first charge (or
// which the inquiry before the charge finds), never a second one.
func (s *Service) createPayment() *phases.Operation {
	return &phases.Operation{
		Name: OpCreatePayment,
		Validate: func(body []byte) error {
			_, _, err := parseCreatePayment(body)
			return err
		},
		Steps: []phases.Step{
			phases.Atomic("payment_created", createPaymentRow),
			phases.Call("charged", s.charge).WithReference(paymentReference),
			phases.Atomic("result_recorded", s.recordResult),
		},
		Settle: s.settlePayment,
	}
}

// createPaymentRow is the payment_created phase: reserve the amount, create the pending payment,
// save it for the charge and the record phase.
func createPaymentRow(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
	invoiceID, amount, err := parseCreatePayment(run.Body())
	if err != nil {
		return phases.Permanent(err)
	}
	p, err := ReservePaymentTx(ctx, tx, run.Tenant(), run.IntentID("pay"), invoiceID, amount)
	var settled *SettledPaymentError
	if errors.As(err, &settled) {
		return answerSettled(run, settled.Payment)
	}
	if err != nil {
		return err
	}
	return pendingPayment.Set(run, *p)
}

// answerSettled answers a request whose payment was settled by an earlier execution of the same
// intent whose key is gone (deleted after its retention): with the payment as it stands, as
// that execution answered (201, or 402 for a decline or a failure), without charging again.
func answerSettled(run *phases.Run, p *Payment) error {
	switch p.Status {
	case "succeeded":
		return run.Respond(http.StatusCreated, p)
	case "declined":
		return respondDeclined(run, p.ID)
	}
	return respondPaymentFailed(run, p.ID, "the payment failed")
}

// respondDeclined answers a declined payment: 402 card_declined with the payment's id.
func respondDeclined(run *phases.Run, paymentID string) error {
	return respondPaymentError(run, CodeCardDeclined, "the gateway declined the charge", paymentID)
}

// respondPaymentFailed answers a failed payment: 402 payment_failed with the payment's id.
func respondPaymentFailed(run *phases.Run, paymentID, message string) error {
	return respondPaymentError(run, CodePaymentFailed, message, paymentID)
}

// respondPaymentError stores a 402 problem whose payment_id names the payment kept with its
// status, so a client can look it up.
func respondPaymentError(run *phases.Run, code, message, paymentID string) error {
	return run.RespondError(http.StatusPaymentRequired, code, message, map[string]any{"payment_id": paymentID})
}

// paymentReference is the downstream key and reference of a payment's charge: payment:<id>,
// derived from the saved payment, the same on every attempt.
func paymentReference(run *phases.Run) (string, error) {
	p, err := pendingPayment.Get(run)
	if err != nil {
		return "", err
	}
	return gateway.DeriveKey("payment", p.ID), nil
}

// PendingPayment is a payment reserved on its invoice and not yet charged.
type PendingPayment struct {
	ID        string    `json:"id"`
	InvoiceID string    `json:"invoice_id"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	CreatedAt time.Time `json:"created_at"`
}

// SettledPaymentError is ReservePaymentTx finding the payment id already settled (succeeded,
// declined or failed) for the same invoice and amount: an earlier execution of the same intent
// finished it, and nothing is reserved again.
type SettledPaymentError struct{ Payment *Payment }

func (e *SettledPaymentError) Error() string {
	return fmt.Sprintf("payment %s is already %s", e.Payment.ID, e.Payment.Status)
}

// ReservePaymentTx reserves amount on the invoice and creates the pending payment id, in one
// statement. The reservation is a conditional UPDATE of the invoice row: concurrent payments of
// one invoice queue on that row, and each re-checks the balance against the row as the one
// before it left it, so together they can never exceed the invoice. It rejects with 404
// not_found or 422 amount_exceeds_balance. It is the first business transaction of
// create_payment, exported so benchmarks can run it without idempotency.
//
// id derives from the intent, so the payment may exist already, made by an earlier execution of
// the same intent whose key is gone (deleted after its retention): then nothing is reserved,
// and ReservePaymentTx returns the payment when it is still pending (its charge is resolved by
// its key or by inquiry), a *SettledPaymentError when it is settled, and rejects with 422
// idempotency_key_reused when it is for another invoice or amount.
func ReservePaymentTx(ctx context.Context, tx pgx.Tx, tenant, id, invoiceID string, amount int64) (*PendingPayment, error) {
	p := &PendingPayment{ID: id, InvoiceID: invoiceID, Amount: amount}
	err := tx.QueryRow(ctx, `WITH reserved AS (
			UPDATE invoices SET reserved = reserved + $3
			WHERE id = $1 AND tenant_id = $2 AND amount - reserved >= $3
				AND NOT EXISTS (SELECT FROM payments WHERE id = $4)
			RETURNING id, currency)
		INSERT INTO payments (id, tenant_id, invoice_id, amount, currency)
		SELECT $4, $2, id, $3, currency FROM reserved
		RETURNING currency, created_at`, invoiceID, tenant, amount, p.ID).Scan(&p.Currency, &p.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return existingPayment(ctx, tx, tenant, p)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// existingPayment is ReservePaymentTx when nothing was reserved: the payment made by an earlier
// execution of the intent, or why none can be (refusePayment).
func existingPayment(ctx context.Context, tx pgx.Tx, tenant string, want *PendingPayment) (*PendingPayment, error) {
	found := *want
	var status string
	var chargeID *string
	err := tx.QueryRow(ctx, `SELECT invoice_id, amount, currency, status, charge_id, created_at
		FROM payments WHERE id = $1 AND tenant_id = $2`, want.ID, tenant).Scan(
		&found.InvoiceID, &found.Amount, &found.Currency, &status, &chargeID, &found.CreatedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, refusePayment(ctx, tx, tenant, want.InvoiceID, want.Amount)
	case err != nil:
		return nil, err
	case found.InvoiceID != want.InvoiceID || found.Amount != want.Amount:
		return nil, phases.Reject(http.StatusUnprocessableEntity, saga.CodeKeyReused,
			"this idempotency key was used for another payment")
	case status == "pending":
		return &found, nil
	}
	return nil, &SettledPaymentError{Payment: &Payment{ID: found.ID, InvoiceID: found.InvoiceID, Amount: found.Amount,
		Status: status, ChargeID: chargeID}}
}

// refusePayment says why no payment could be reserved: no such invoice, or not enough left.
func refusePayment(ctx context.Context, tx pgx.Tx, tenant, invoiceID string, amount int64) error {
	var outstanding int64
	err := tx.QueryRow(ctx, `SELECT amount - reserved FROM invoices WHERE id = $1 AND tenant_id = $2`, invoiceID, tenant).Scan(&outstanding)
	if errors.Is(err, pgx.ErrNoRows) {
		return phases.Reject(http.StatusNotFound, CodeNotFound, "no such invoice")
	}
	if err != nil {
		return err
	}
	return phases.Reject(http.StatusUnprocessableEntity, CodeAmountExceedsBalance,
		fmt.Sprintf("the amount %d exceeds the outstanding balance %d", amount, outstanding))
}

// SettlePaymentTx records a pending payment's result, in one statement: a success moves the
// amount from reserved to paid (and marks the invoice paid when it is), a decline or a failure
// gives the reservation back. It is the second business transaction of create_payment, exported
// for benchmarks. chargeID may be empty only for "failed".
func SettlePaymentTx(ctx context.Context, tx pgx.Tx, paymentID, status, chargeID string) error {
	var charge *string
	if chargeID != "" {
		charge = &chargeID
	}
	_, err := tx.Exec(ctx, `WITH settled AS (
			UPDATE payments SET status = $2, charge_id = $3
			WHERE id = $1 AND status = 'pending'
			RETURNING invoice_id, amount, status)
		UPDATE invoices i SET
			paid = i.paid + CASE WHEN s.status = 'succeeded' THEN s.amount ELSE 0 END,
			reserved = i.reserved - CASE WHEN s.status = 'succeeded' THEN 0 ELSE s.amount END,
			status = CASE WHEN s.status = 'succeeded' AND i.paid + s.amount = i.amount THEN 'paid' ELSE i.status END
		FROM settled s WHERE i.id = s.invoice_id`,
		paymentID, status, charge)
	return err
}

// charge calls the gateway outside any transaction, with the reference the engine journaled
// before the call. What earlier attempts may have done is resolved from the call journal (inquiry
// first when the gateway has it) before anything is sent again.
func (s *Service) charge(ctx context.Context, run *phases.Run) error {
	p, err := pendingPayment.Get(run)
	if err != nil {
		return err
	}
	// The run is the call's journal: Execute learns from it whether an earlier attempt may have
	// reached the gateway, and records what this one came to.
	opts := &gateway.ExecuteOpts{KeyCreatedAt: p.CreatedAt}
	if s.cfg.GatewayRetries > 0 {
		opts.Retries = int(s.cfg.GatewayRetries)
		opts.RetryDelay = func(n int) time.Duration { return 20 * time.Millisecond << min(n-1, 6) }
	}
	charge, err := gateway.Execute(ctx, run, s.cfg.Gateway, gateway.ChargeParams{
		Amount: p.Amount, Currency: p.Currency, Reference: run.Reference(), IdempotencyKey: run.Reference(),
	}, opts)
	if err != nil {
		return err
	}
	return chargeResult.Set(run, *charge)
}

// recordResult settles the payment and the invoice in one statement and answers: 201 for a
// succeeded charge, 402 card_declined (with the payment kept as declined) for a decline.
func (s *Service) recordResult(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
	p, err := pendingPayment.Get(run)
	if err != nil {
		return err
	}
	charge, err := chargeResult.Get(run)
	if err != nil {
		return err
	}
	status := "declined"
	if charge.Status == gateway.StatusSucceeded {
		status = "succeeded"
	}
	if err := SettlePaymentTx(ctx, tx, p.ID, status, charge.ID); err != nil {
		return err
	}
	payment := &Payment{ID: p.ID, InvoiceID: p.InvoiceID, Amount: p.Amount, Status: status, ChargeID: &charge.ID}
	if err := s.runHooks(ctx, tx, run.Tenant(), payment); err != nil {
		return err
	}
	if status == "declined" {
		return respondDeclined(run, p.ID)
	}
	return run.Respond(http.StatusCreated, payment)
}

// settlePayment is an operator's decision about a payment parked with an outcome nothing could
// resolve: succeeded records the payment with the provider's charge (the settlement's
// reference, required) and answers 201 like a charged payment; failed marks it failed, gives
// its reservation back and answers 402 payment_failed.
func (s *Service) settlePayment(ctx context.Context, tx pgx.Tx, run *phases.Run, d *phases.Settlement) error {
	p, err := pendingPayment.Get(run)
	if err != nil {
		return errors.New("the payment was never created: nothing to settle")
	}
	switch d.Outcome {
	case phases.SettleSucceeded:
		if d.Reference == "" {
			return errors.New("settling a payment as succeeded needs --reference: the provider's charge id")
		}
		if err := SettlePaymentTx(ctx, tx, p.ID, "succeeded", d.Reference); err != nil {
			return err
		}
		payment := &Payment{ID: p.ID, InvoiceID: p.InvoiceID, Amount: p.Amount, Status: "succeeded", ChargeID: &d.Reference}
		if err := s.runHooks(ctx, tx, run.Tenant(), payment); err != nil {
			return err
		}
		return run.Respond(http.StatusCreated, payment)
	default:
		if err := SettlePaymentTx(ctx, tx, p.ID, "failed", ""); err != nil {
			return err
		}
		return respondPaymentFailed(run, p.ID, "the payment failed: "+d.Note)
	}
}

func (s *Service) runHooks(ctx context.Context, tx pgx.Tx, tenant string, p *Payment) error {
	for _, hook := range s.cfg.PaymentHooks {
		if err := hook(ctx, tx, tenant, p); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) listPayments(w http.ResponseWriter, r *http.Request, scope saga.Scope) {
	listUnder(s, w, r, scope, "invoice_id", "invoice", "payments",
		`SELECT p.id, i.id, p.amount, p.status, p.charge_id
		FROM invoices i LEFT JOIN payments p ON p.invoice_id = i.id AND p.tenant_id = i.tenant_id
		WHERE i.id = $1 AND i.tenant_id = $2 ORDER BY p.created_at, p.id`,
		func(row pgx.Row) (Payment, bool, error) {
			var (
				p      Payment
				id     *string
				amount *int64
				status *string
			)
			err := row.Scan(&id, &p.InvoiceID, &amount, &status, &p.ChargeID)
			if err != nil || id == nil {
				return p, false, err
			}
			p.ID, p.Amount, p.Status = *id, *amount, *status
			return p, true, nil
		})
}
