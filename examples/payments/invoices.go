package payments

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/pgsaga/pgsaga/phases"
	"github.com/pgsaga/pgsaga/saga"
)

// Invoice is an amount owed, paid by succeeded payments.
type Invoice struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Paid     int64  `json:"paid"`
	Status   string `json:"status"`
}

type createInvoiceParams struct {
	Amount   json.RawMessage `json:"amount"`
	Currency string          `json:"currency"`
}

func parseCreateInvoice(body []byte) (int64, string, error) {
	var p createInvoiceParams
	if err := decodeStrict(body, &p); err != nil {
		return 0, "", err
	}
	amount, err := positiveAmount("amount", p.Amount)
	if err != nil {
		return 0, "", err
	}
	return amount, p.Currency, checkCurrency(p.Currency)
}

// createInvoice is a single-transaction operation: POST /invoices.
func createInvoice() *phases.Operation {
	return &phases.Operation{
		Name: OpCreateInvoice,
		Validate: func(body []byte) error {
			_, _, err := parseCreateInvoice(body)
			return err
		},
		Steps: []phases.Step{
			phases.Atomic("invoice_created", func(ctx context.Context, tx pgx.Tx, run *phases.Run) error {
				amount, currency, err := parseCreateInvoice(run.Body())
				if err != nil {
					return phases.Permanent(err)
				}
				inv := Invoice{ID: run.IntentID("inv"), Amount: amount, Currency: currency, Status: "open"}
				// The id derives from the intent: an invoice made by an earlier execution of
				// it whose key is gone (deleted after its retention) is answered as it stands.
				err = tx.QueryRow(ctx, `WITH created AS (
						INSERT INTO invoices (id, tenant_id, amount, currency) VALUES ($1, $2, $3, $4)
						ON CONFLICT (id) DO NOTHING RETURNING paid, status)
					SELECT paid, status FROM created
					UNION ALL
					SELECT paid, status FROM invoices
					WHERE id = $1 AND tenant_id = $2 AND amount = $3 AND currency = $4 AND NOT EXISTS (SELECT FROM created)`,
					inv.ID, run.Tenant(), inv.Amount, inv.Currency).Scan(&inv.Paid, &inv.Status)
				if errors.Is(err, pgx.ErrNoRows) {
					return phases.Reject(http.StatusUnprocessableEntity, saga.CodeKeyReused,
						"this idempotency key was used for another invoice")
				}
				if err != nil {
					return err
				}
				return run.Respond(http.StatusCreated, inv)
			}),
		},
	}
}

func (s *Service) getInvoice(w http.ResponseWriter, r *http.Request, scope saga.Scope) {
	if !possibleID(r.PathValue("id")) {
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such invoice")
		return
	}
	var inv Invoice
	err := s.cfg.Pool.QueryRow(r.Context(), `SELECT id, amount, currency, paid, status FROM invoices WHERE id = $1 AND tenant_id = $2`,
		r.PathValue("id"), scope.Tenant).Scan(&inv.ID, &inv.Amount, &inv.Currency, &inv.Paid, &inv.Status)
	if errors.Is(err, pgx.ErrNoRows) {
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such invoice")
		return
	}
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, inv)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func unavailable(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	saga.WriteError(w, http.StatusServiceUnavailable, saga.CodeTemporarilyUnavailable, "the database is unavailable; retry")
}

// unavailable answers a read the database did not serve, logging why with the request's
// context (its id): the client is told only to retry.
func (s *Service) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.logger().ErrorContext(r.Context(), "payments: reading", "path", r.URL.Path, "error", err)
	unavailable(w)
}

// listUnder answers a GET of the rows under one parent (the payments of an invoice, the sales of
// an order) in one query: 400 without the parent's id in param, 404 not_found when the tenant has
// no such parent, otherwise 200 {field: [...]}. query selects the parent ($1, tenant $2) LEFT
// JOINed to its rows, so a parent without rows is one row that scan reports as no row.
func listUnder[T any](s *Service, w http.ResponseWriter, r *http.Request, scope saga.Scope, param, parent, field, query string,
	scan func(pgx.Row) (T, bool, error)) {
	id := r.URL.Query().Get(param)
	if id == "" {
		saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, param+" is required")
		return
	}
	if !possibleID(id) {
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such "+parent)
		return
	}
	rows, err := s.cfg.Pool.Query(r.Context(), query, id, scope.Tenant)
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	defer rows.Close()
	found, list := false, []T{}
	for rows.Next() {
		found = true
		v, ok, err := scan(rows)
		if err != nil {
			s.unavailable(w, r, err)
			return
		}
		if ok {
			list = append(list, v)
		}
	}
	if err := rows.Err(); err != nil {
		s.unavailable(w, r, err)
		return
	}
	if !found {
		saga.WriteError(w, http.StatusNotFound, CodeNotFound, "no such "+parent)
		return
	}
	writeJSON(w, http.StatusOK, map[string][]T{field: list})
}
