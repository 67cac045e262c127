package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgsaga/pgsaga/gateway"
)

func TestTransportError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, refused := http.Get("http://" + addr)
	require.Error(t, refused)
	require.Equal(t, gateway.OutcomeRetryable, gateway.Classify(nil, gateway.TransportError(refused)))

	for _, err := range []error{io.EOF, io.ErrUnexpectedEOF, context.DeadlineExceeded, errors.New("connection reset by peer")} {
		require.Equal(t, gateway.OutcomeAmbiguous, gateway.Classify(nil, gateway.TransportError(err)), "%v", err)
	}
}
