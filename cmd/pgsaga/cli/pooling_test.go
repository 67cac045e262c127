package cli

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Behind a transaction pooler the pool opens in pgx's cache_describe mode, whichever way the
// connection string is written, unless it names the mode itself.
func TestWithPooling(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, url, pooling string
		want               pgx.QueryExecMode
		refused            bool
	}{
		{"session leaves the URL alone", "postgres://u@h/db", poolingSession, pgx.QueryExecModeCacheStatement, false},
		{"URL without a query", "postgres://u@h:6432/db", poolingTransaction, pgx.QueryExecModeCacheDescribe, false},
		{"URL with a query", "postgres://u@h:6432/db?sslmode=disable&pool_max_conns=4", poolingTransaction, pgx.QueryExecModeCacheDescribe, false},
		{"several hosts", "postgresql://u@h1:6432,h2:6432/db?target_session_attrs=read-write", poolingTransaction, pgx.QueryExecModeCacheDescribe, false},
		{"keyword/value", "host=h port=6432 user=u dbname=db", poolingTransaction, pgx.QueryExecModeCacheDescribe, false},
		{"URL naming cache_describe", "postgres://u@h/db?default_query_exec_mode=cache_describe", poolingTransaction, pgx.QueryExecModeCacheDescribe, false},
		{"URL naming another mode", "postgres://u@h/db?default_query_exec_mode=cache_statement", poolingTransaction, 0, true},
		{"keyword/value naming another mode", "host=h default_query_exec_mode=simple_protocol", poolingTransaction, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url, err := withPooling(c.url, c.pooling)
			if c.refused {
				require.Equal(t, ExitUsage, exitCode(err), "%v", err)
				require.ErrorContains(t, err, "needs pgx's default_query_exec_mode=cache_describe")
				return
			}
			require.NoError(t, err)
			cfg, err := pgx.ParseConfig(url)
			require.NoError(t, err)
			require.Equal(t, c.want, cfg.DefaultQueryExecMode)
		})
	}
}
