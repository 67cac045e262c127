package problem_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/problem"
)

// A member that cannot be encoded is left out of a body that stays whole, and named in the error.
func TestBodyLeavesOutWhatCannotBeEncoded(t *testing.T) {
	t.Parallel()
	body, err := problem.Body(http.StatusConflict, "price_changed", "changed", map[string]any{
		"current_price": 1350, "callback": func() {}, "message": "replaced",
	})
	require.ErrorContains(t, err, `problem member "callback" cannot be encoded`)
	require.Equal(t, `{"type":"urn:pgsaga:error:price_changed","title":"Price changed","status":409,"detail":"changed",`+
		`"error":"price_changed","message":"changed","current_price":1350}`, string(body))
}
