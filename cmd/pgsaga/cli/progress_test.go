package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockedBuffer is a terminal stand-in the bar's timer goroutine may write to.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestProgressShownOnlyAfterTheDelay(t *testing.T) {
	t.Parallel()
	term := &lockedBuffer{}
	p := startProgress(term, "resuming stuck keys", "keys", 3, time.Hour)
	p.add(1)
	p.println(&bytes.Buffer{}, "a line")
	p.finish()
	require.Empty(t, term.String(), "an operation shorter than the delay draws nothing")

	term = &lockedBuffer{}
	p = startProgress(term, "resuming stuck keys", "keys", 3, 0)
	require.Eventually(t, func() bool { return strings.Contains(term.String(), "resuming stuck keys") }, 10*time.Second, time.Millisecond)
	p.add(2)
	var out bytes.Buffer
	p.println(&out, "t1 alice key-0001 201 Created")
	require.Equal(t, "t1 alice key-0001 201 Created\n", out.String(), "the command's output is untouched by the bar")
	// The bar redraws at most every 65ms: poll with empty updates.
	require.Eventually(t, func() bool { p.add(0); return strings.Contains(term.String(), "2/3") }, 10*time.Second, time.Millisecond)
	p.finish()
	drawn := term.String()
	p.add(1)
	require.Equal(t, drawn, term.String(), "nothing is drawn after finish")
}

func TestProgressSpinnerForAnUnknownTotal(t *testing.T) {
	t.Parallel()
	term := &lockedBuffer{}
	p := startProgress(term, "deleting completed keys", "keys", -1, 0)
	require.Eventually(t, func() bool { return strings.Contains(term.String(), "deleting completed keys") }, 10*time.Second, time.Millisecond)
	p.set(1000) // gc reports the total deleted after each batch
	p.set(2000)
	require.Eventually(t, func() bool { p.add(0); return strings.Contains(term.String(), "2000") }, 10*time.Second, time.Millisecond)
	p.finish()
}

// Not a terminal (a pipe, a file, a buffer) or --json: never a bar, whatever the duration.
func TestProgressNeverWhenPipedOrJSON(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	c := &cli{env: (&Env{Stderr: &stderr}).withDefaults()}
	for _, asJSON := range []bool{false, true} {
		p := c.newProgress("deleting completed keys", "keys", -1, asJSON)
		require.Nil(t, p.out)
		p.add(5)
		p.finish()
	}
	require.Empty(t, stderr.String())
	require.False(t, isTerminal(&stderr))
}
