package phases

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// RespondError answers errors only: a status outside 4xx, a missing code or a field that
// cannot be encoded is the operation's bug, refused permanently and answering nothing.
func TestRespondErrorRefusesWhatIsNoError(t *testing.T) {
	t.Parallel()
	for name, respond := range map[string]func(*Run) error{
		"5xx":     func(run *Run) error { return run.RespondError(http.StatusServiceUnavailable, "down", "down", nil) },
		"2xx":     func(run *Run) error { return run.RespondError(http.StatusOK, "fine", "fine", nil) },
		"no code": func(run *Run) error { return run.RespondError(http.StatusConflict, "", "held", nil) },
		"unencodable": func(run *Run) error {
			return run.RespondError(http.StatusConflict, "held", "held", map[string]any{"f": func() {}})
		},
	} {
		run := newRun("t", "a", "key-00000001", "op")
		err := respond(run)
		require.Error(t, err, name)
		require.False(t, IsRetryable(err), name)
		require.Nil(t, run.state().Response(), "%s: nothing to store", name)
	}
}
