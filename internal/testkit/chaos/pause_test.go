package chaos_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
)

// syncBuffer is a bytes.Buffer safe to read while Pause writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestPause(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	release := filepath.Join(t.TempDir(), "release")
	env := func(value string) func(string) string {
		return func(name string) string {
			if name == chaos.EnvPause {
				return value
			}
			return ""
		}
	}
	log := &syncBuffer{}
	require.NoError(t, chaos.Pause(ctx, env(""), "a", log), "no variable: no pause")
	require.NoError(t, chaos.Pause(ctx, env("b="+release), "a", log), "another point: no pause")
	require.Empty(t, log.String())
	require.ErrorContains(t, chaos.Pause(ctx, env("a"), "a", log), "POINT=FILE")

	done := make(chan error, 1)
	go func() { done <- chaos.Pause(ctx, env("b=/nowhere,a="+release), "a", log) }()
	deadline := time.Now().Add(10 * time.Second)
	for log.String() != chaos.PausedLine("a")+"\n" {
		require.True(t, time.Now().Before(deadline), "no paused line: %q", log.String())
		select {
		case err := <-done:
			t.Fatalf("Pause returned before its file existed: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Pause did not return once its file existed")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, chaos.Pause(cancelled, env("a="+filepath.Join(t.TempDir(), "never")), "a", log), context.Canceled)
}
