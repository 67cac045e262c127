package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The simulator's server has the limits of pgsaga's own: a slow or hostile client cannot hold
// its connections.
func TestServerHasTimeouts(t *testing.T) {
	t.Parallel()
	srv := New(nil).newServer(context.Background())
	require.Equal(t, 10*time.Second, srv.ReadHeaderTimeout)
	require.Equal(t, 30*time.Second, srv.ReadTimeout)
	require.Equal(t, time.Minute, srv.WriteTimeout)
	require.Equal(t, time.Minute, srv.IdleTimeout)
	require.Equal(t, 64<<10, srv.MaxHeaderBytes)
}
