package phases

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/runstate"
)

func newRun(tenant, actor, key, operation string) *Run {
	return (*Run)(runstate.New(runstate.Params{Tenant: tenant, Actor: actor, Key: key, Operation: operation}))
}

// The derivations are stored (ids in tables, references at providers): these values must never
// change.
func TestIntentDerivationsAreFixed(t *testing.T) {
	t.Parallel()
	run := newRun("tenant-1", "alice", "4f1c2a9e-key", "create_payment")
	require.Equal(t, "pay_rne4adu4q7uttomahtfnsihyc4", run.IntentID("pay"))
	require.Equal(t, "pay_rne4adu4q7uttomahtfnsihyc4", IntentID("tenant-1", "alice", "4f1c2a9e-key", "pay"),
		"a tool finds the row from the scope and the key")
	require.Equal(t, "ref_btcc5nltypdlg7lm6qqv74sycm", DefaultReference("tenant-1", "alice", "4f1c2a9e-key", "create_payment", "charged"))
}

func TestIntentIDs(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^pay_[a-z2-7]{26}$`)
	run := newRun("t", "a", "key-00000001", "op")
	id := run.IntentID("pay")
	require.Regexp(t, shape, id)
	require.Equal(t, id, newRun("t", "a", "key-00000001", "other op").IntentID("pay"), "the intent alone, not the operation")
	seen := map[string]bool{id: true}
	for _, other := range []*Run{
		newRun("t", "a", "key-00000002", "op"),
		newRun("t", "b", "key-00000001", "op"),
		newRun("u", "a", "key-00000001", "op"),
		// Parts are length-prefixed: moving a boundary between them changes the id.
		newRun("ta", "", "key-00000001", "op"),
		newRun("t", "ak", "ey-00000001", "op"),
	} {
		o := other.IntentID("pay")
		require.Regexp(t, shape, o)
		require.False(t, seen[o], "%s repeats", o)
		seen[o] = true
	}
	require.NotEqual(t, strings.TrimPrefix(id, "pay_"), strings.TrimPrefix(run.IntentID("inv"), "inv_"), "the prefix is hashed too")
}

func TestDefaultReferences(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 255)
	ref := DefaultReference(strings.Repeat("t", 64), strings.Repeat("a", 64), long, long, long)
	require.Regexp(t, `^ref_[a-z2-7]{26}$`, ref, "within any provider's key limit whatever the inputs")
	require.NotEqual(t, DefaultReference("t", "a", "key-00000001", "op", "charge"), DefaultReference("t", "a", "key-00000001", "op", "refund"),
		"two calls of one operation")
	require.NotEqual(t, DefaultReference("t", "a", "key-00000001", "op", "charge"), DefaultReference("t", "a", "key-00000001", "op2", "charge"))
	require.NotEqual(t, DefaultReference("t", "a", "key-00000001", "op", "charge"), DefaultReference("t", "a", "key-00000002", "op", "charge"))
}
