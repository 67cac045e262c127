package shop

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/pgsaga/pgsaga/saga"
)

// Product is a line of the price list.
type Product struct {
	SKU   string `json:"sku"`
	Price int64  `json:"price"`
}

// putProduct is PUT /products/{sku} with {"price": N}: sets the product's price, the one orders
// are checked against. A PUT is idempotent by itself (the same body again sets the same price),
// so it takes no Idempotency-Key.
func (s *Service) putProduct(w http.ResponseWriter, r *http.Request, scope saga.Scope) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidJSON, "error reading the request body")
		return
	}
	var p struct {
		Price int64 `json:"price"`
	}
	if err := decodeBody(body, &p); err != nil {
		saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, err.Error())
		return
	}
	if p.Price <= 0 || p.Price > 1_000_000_000 {
		saga.WriteError(w, http.StatusBadRequest, saga.CodeInvalidRequest, "price must be a whole number of minor units from 1 to 1000000000")
		return
	}
	product := Product{SKU: r.PathValue("sku"), Price: p.Price}
	_, err = s.cfg.Pool.Exec(r.Context(), `INSERT INTO shop_products (tenant_id, sku, price) VALUES ($1, $2, $3)
		ON CONFLICT (tenant_id, sku) DO UPDATE SET price = excluded.price, updated_at = now()`,
		scope.Tenant, product.SKU, product.Price)
	if err != nil {
		s.unavailable(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, product)
}

// unavailable answers a request the database could not serve: 503, logged without the
// database's text in the answer.
func (s *Service) unavailable(w http.ResponseWriter, r *http.Request, err error) {
	s.logger().ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "error", err)
	w.Header().Set("Retry-After", "1")
	saga.WriteError(w, http.StatusServiceUnavailable, saga.CodeTemporarilyUnavailable, "the request could not be served now; retry")
}

func (s *Service) logger() *slog.Logger {
	if s.cfg.Logger != nil {
		return s.cfg.Logger
	}
	return slog.New(slog.DiscardHandler)
}
