package saga_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/saga"
)

// An error is an RFC 9457 problem details object: type, title, status and detail, then the
// stable code and the message as extension members, then the caller's extensions by name.
func TestProblemBody(t *testing.T) {
	t.Parallel()
	require.Equal(t, `{"type":"urn:pgsaga:error:idempotency_key_reused","title":"Idempotency key reused","status":422,`+
		`"detail":"this key was used for another request","error":"idempotency_key_reused","message":"this key was used for another request"}`,
		string(saga.ProblemBody(http.StatusUnprocessableEntity, saga.CodeKeyReused, "this key was used for another request", nil)))

	body := saga.ProblemBody(http.StatusPaymentRequired, "card_declined", "declined", map[string]any{
		"payment_id": "pay_1", "attempts": 2, "status": 200, "error": "other",
	})
	require.Equal(t, `{"type":"urn:pgsaga:error:card_declined","title":"Card declined","status":402,"detail":"declined",`+
		`"error":"card_declined","message":"declined","attempts":2,"payment_id":"pay_1"}`, string(body),
		"extensions follow by name; one named like a member of the problem is left out")
}

func TestWriteErrorAnswersProblemDetails(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	saga.WriteError(rec, http.StatusNotFound, "not_found", "no such invoice")
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	require.JSONEq(t, `{"type":"urn:pgsaga:error:not_found","title":"Not found","status":404,"detail":"no such invoice",
		"error":"not_found","message":"no such invoice"}`, rec.Body.String())
}
