package sim

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pgsaga/pgsaga/gateway"
	"github.com/pgsaga/pgsaga/internal/sleep"
)

// maxBody bounds request bodies; a charge or a faults document is a few hundred bytes.
const maxBody = 64 << 10

// Handler serves the simulator's wire format (see the package documentation). Every
// answer is JSON; errors are {"error": code, "message": text}.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /charges", s.handleCharge)
	mux.HandleFunc("GET /charges", s.handleCharges)
	mux.HandleFunc("GET /charges/{id}", s.handleGet)
	mux.Handle("GET /_sim/ledger", s.control(s.handleLedger))
	mux.Handle("GET /_sim/info", s.control(s.handleInfo))
	mux.Handle("POST /_sim/faults", s.control(s.handleFaults))
	return mux
}

// codeUnauthenticated is the error of a control request without the control token.
const codeUnauthenticated = "unauthenticated"

// control guards a control endpoint with Config.ControlToken, when there is one: the Bearer
// token's digest is compared in constant time, so neither the comparison nor its length tells
// how much of a guess was right.
func (s *Simulator) control(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.controlSum != nil {
			scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
			sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
			if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], s.controlSum) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gateway-sim control"`)
				writeError(w, http.StatusUnauthorized, codeUnauthenticated,
					"the simulator's control endpoints need Authorization: Bearer <control token>")
				return
			}
		}
		h(w, r)
	})
}

// chargeRequest is the body of POST /charges.
type chargeRequest struct {
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

func (s *Simulator) handleCharge(w http.ResponseWriter, r *http.Request) {
	var req chargeRequest
	if err := decodeJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return
	}
	v := s.charge(gateway.ChargeParams{
		Amount:         req.Amount,
		Currency:       req.Currency,
		Reference:      req.Reference,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
	})
	// The answer leaves after the latency faults: the server's write timeout must not cut it.
	// (landAt is zero for a charge refused at once.)
	_ = http.NewResponseController(w).SetWriteDeadline(later(time.Now(), v.landAt).Add(v.Delay + writeTimeout))
	// A slow network to the provider: the request has taken effect by landAt even if its caller
	// gave up meanwhile; the answer leaves from there.
	time.Sleep(time.Until(v.landAt))
	switch {
	case errors.Is(v.err, errUnavailable):
		// The explicit marker is the only 5xx a client may take as "nothing charged": a proxy's
		// 502 or 504 in front of us promises nothing.
		writeError(w, http.StatusServiceUnavailable, notProcessed, v.err.Error())
		return
	case errors.Is(v.err, errKeyReused):
		writeError(w, http.StatusUnprocessableEntity, codeKeyReused, v.err.Error())
		return
	case v.err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", v.err.Error())
		return
	}
	if v.Hang {
		// No answer, until the client goes away or the server stops.
		<-r.Context().Done()
		loseResponse(w)
		return
	}
	if !sleep.For(r.Context(), v.Delay) {
		// The client went away or the server is stopping: the answer is lost either way.
		loseResponse(w)
		return
	}
	if v.Lose {
		loseResponse(w)
		return
	}
	writeJSON(w, http.StatusCreated, v.charge)
}

// loseResponse closes the connection without a byte of answer, as a network failure after
// the provider acted would. Without hijacking (HTTP/2) it aborts the handler, which resets
// the stream.
func loseResponse(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// handleCharges serves GET /charges: an inquiry by reference, or the list of charges since a
// time; never both at once.
func (s *Simulator) handleCharges(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch {
	case q.Has("reference") && q.Has("since"):
		writeError(w, http.StatusBadRequest, "invalid_request",
			"give query parameter reference (inquiry) or since (list), not both")
	case q.Has("since"):
		s.handleList(w, r)
	default:
		s.handleInquire(w, r)
	}
}

func (s *Simulator) handleInquire(w http.ResponseWriter, r *http.Request) {
	reference := r.URL.Query().Get("reference")
	if reference == "" {
		writeError(w, http.StatusBadRequest, "invalid_request",
			"query parameter reference (inquiry) or since (list) is required")
		return
	}
	found, ok := s.inquire(reference)
	if !ok {
		writeError(w, http.StatusNotFound, "inquiry_unsupported", "this gateway does not support inquiry")
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Charges []gateway.Charge `json:"charges"`
	}{found})
}

// listAnswer is the body of GET /charges?since=….
type listAnswer struct {
	Charges []gateway.Charge `json:"charges"`
	// HasMore is true when limit cut the list short: the next page starts after the last charge.
	HasMore bool `json:"has_more"`
}

// handleList serves GET /charges?since=T[&limit=N][&starting_after=ID]: every charge landed
// since T, oldest first, in one answer, or a page of at most N after the charge ID.
func (s *Simulator) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// An unescaped "+" of a zone offset arrives as a space; no RFC 3339 time has one.
	since, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(q.Get("since"), " ", "+"))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request",
			fmt.Sprintf("query parameter since must be an RFC 3339 time such as 2026-01-02T15:04:05Z: %v", err))
		return
	}
	limit := 0
	if q.Has("limit") {
		limit, err = strconv.Atoi(q.Get("limit"))
		if err != nil || limit < 1 || limit > maxListLimit {
			writeError(w, http.StatusBadRequest, "invalid_request",
				fmt.Sprintf("query parameter limit must be an integer in [1, %d], got %q", maxListLimit, q.Get("limit")))
			return
		}
	}
	page, more, err := s.listPage(since, q.Get("starting_after"), limit)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, listAnswer{Charges: page, HasMore: more})
}

func (s *Simulator) handleGet(w http.ResponseWriter, r *http.Request) {
	charge, ok := s.Get(r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such charge")
		return
	}
	writeJSON(w, http.StatusOK, charge)
}

func (s *Simulator) handleLedger(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Ledger())
}

// info is the body of GET /_sim/info.
type info struct {
	Idempotency   bool  `json:"idempotency"`
	Inquiry       bool  `json:"inquiry"`
	MaxInFlightMS int64 `json:"max_in_flight_ms"`
}

// codeKeyReused is the error code of a repeated idempotency key carrying other parameters.
const codeKeyReused = "idempotency_key_reused"

// notProcessed is the error code of the fail-before 503: the request was refused before
// anything was charged.
const notProcessed = "not_processed"

func (s *Simulator) handleInfo(w http.ResponseWriter, _ *http.Request) {
	caps := s.Capabilities()
	writeJSON(w, http.StatusOK, info{Idempotency: caps.IdempotencyKeys, Inquiry: caps.Inquiry, MaxInFlightMS: ceilMS(caps.MaxInFlight)})
}

// ceilMS is d in whole milliseconds, rounded up: a window reported short would let a client
// trust an empty inquiry too early.
func ceilMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// faultsDoc is the body of POST /_sim/faults (every member optional) and its answer (every
// member present).
type faultsDoc struct {
	LatencyMS       *int64   `json:"latency_ms,omitempty"`
	LatencyJitterMS *int64   `json:"latency_jitter_ms,omitempty"`
	LatencyBeforeMS *int64   `json:"latency_before_ms,omitempty"`
	FailBefore      *float64 `json:"fail_before,omitempty"`
	LoseResponse    *float64 `json:"lose_response,omitempty"`
	DeclineOver     *int64   `json:"decline_over,omitempty"`
	Idempotency     *bool    `json:"idempotency,omitempty"`
	Inquiry         *bool    `json:"inquiry,omitempty"`
	Pending         *float64 `json:"pending,omitempty"`
	PendingMS       *int64   `json:"pending_ms,omitempty"`
}

func (d faultsDoc) apply(st *Settings) {
	if d.LatencyMS != nil {
		st.Latency = time.Duration(*d.LatencyMS) * time.Millisecond
	}
	if d.LatencyJitterMS != nil {
		st.LatencyJitter = time.Duration(*d.LatencyJitterMS) * time.Millisecond
	}
	if d.LatencyBeforeMS != nil {
		st.LatencyBefore = time.Duration(*d.LatencyBeforeMS) * time.Millisecond
	}
	if d.FailBefore != nil {
		st.FailBefore = *d.FailBefore
	}
	if d.LoseResponse != nil {
		st.LoseResponse = *d.LoseResponse
	}
	if d.DeclineOver != nil {
		st.DeclineOver = *d.DeclineOver
	}
	if d.Idempotency != nil {
		st.Idempotency = *d.Idempotency
	}
	if d.Inquiry != nil {
		st.Inquiry = *d.Inquiry
	}
	if d.Pending != nil {
		st.Pending = *d.Pending
	}
	if d.PendingMS != nil {
		st.PendingFor = time.Duration(*d.PendingMS) * time.Millisecond
	}
}

func faultsDocOf(st Settings) faultsDoc {
	latency, jitter, before, pendingFor := st.Latency.Milliseconds(), st.LatencyJitter.Milliseconds(),
		st.LatencyBefore.Milliseconds(), st.PendingFor.Milliseconds()
	return faultsDoc{
		LatencyMS:       &latency,
		LatencyJitterMS: &jitter,
		LatencyBeforeMS: &before,
		Pending:         &st.Pending,
		PendingMS:       &pendingFor,
		FailBefore:      &st.FailBefore,
		LoseResponse:    &st.LoseResponse,
		DeclineOver:     &st.DeclineOver,
		Idempotency:     &st.Idempotency,
		Inquiry:         &st.Inquiry,
	}
}

func (s *Simulator) handleFaults(w http.ResponseWriter, r *http.Request) {
	var doc faultsDoc
	if err := decodeJSON(r, &doc); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_json", err.Error())
		return
	}
	st, err := s.SetFaults(doc.apply)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, faultsDocOf(st))
}

// decodeJSON reads one JSON object with no unknown members from r's body.
func decodeJSON(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"error": code, "message": message})
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
