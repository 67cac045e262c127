package pgcluster

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testConfig(t testing.TB) *Config {
	return &Config{Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))}
}

// exec runs sql on url and returns the one value it selects, if any.
func queryURL[T any](t testing.TB, url, sql string, args ...any) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var v T
	require.NoError(t, conn.QueryRow(ctx, sql, args...).Scan(&v))
	return v
}

func TestSmoke(t *testing.T) {
	cfg := testConfig(t)
	cfg.Synchronous = true
	begin := time.Now()
	c, err := Start(t.Context(), cfg)
	require.NoError(t, err)
	t.Logf("started in %s", time.Since(begin))
	defer func() {
		for _, n := range c.Nodes() {
			b, _ := os.ReadFile(n.LogPath())
			_ = os.WriteFile("/tmp/smoke-"+n.Name+".log", b, 0o644)
		}
		require.NoError(t, c.Stop())
	}()
	require.Equal(t, "off", queryURL[string](t, c.URL("postgres"), "SHOW transaction_read_only"))

	for _, fault := range []string{"kill", "partition", "switchover"} {
		begin = time.Now()
		var old *Node
		switch fault {
		case "kill":
			old, err = c.KillPrimary(t.Context())
			require.NoError(t, err)
			_, err = c.WaitForPrimary(t.Context(), old)
		case "partition":
			var p *Partition
			p, err = c.PartitionPrimary(t.Context())
			require.NoError(t, err)
			old = p.Node
			_, err = c.WaitForPrimary(t.Context(), old)
			require.NoError(t, p.Heal())
		case "switchover":
			_, err = c.Switchover(t.Context())
		}
		require.NoError(t, err)
		t.Logf("%s: new primary after %s", fault, time.Since(begin))
		_, _, err = c.WaitHealthy(t.Context())
		require.NoError(t, err)
		t.Logf("%s: healthy after %s", fault, time.Since(begin))
	}
}
