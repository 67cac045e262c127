package cli

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveTest serves h with opts on a free port until the test ends and returns its address.
func serveTest(t *testing.T, h http.Handler, opts *serverOpts) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newHTTPServer(h, opts)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// readUntilClosed reads conn until the server closes it, and returns what it read and how
// long that took; it fails the test if the server keeps it open for 10s.
func readUntilClosed(t *testing.T, conn net.Conn) (string, time.Duration) {
	t.Helper()
	begin := time.Now()
	require.NoError(t, conn.SetReadDeadline(begin.Add(10*time.Second)))
	b, err := io.ReadAll(conn)
	var netErr net.Error
	require.False(t, errors.As(err, &netErr) && netErr.Timeout(), "the server kept the connection open")
	return string(b), time.Since(begin)
}

// A client that sends its headers slowly (slowloris) is cut off after ReadHeaderTimeout, and
// its request never reaches the handler.
func TestServerCutsOffASlowHeaderClient(t *testing.T) {
	t.Parallel()
	var handled atomic.Bool
	addr := serveTest(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled.Store(true) }),
		&serverOpts{ReadHeaderTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /payments HTTP/1.1\r\nHost: x\r\n")
	require.NoError(t, err)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one header byte every 50ms, for ever
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				if _, err := io.WriteString(conn, "X"); err != nil {
					return
				}
			}
		}
	}()
	_, took := readUntilClosed(t, conn)
	require.Less(t, took, 5*time.Second)
	require.False(t, handled.Load())
}

// A client that never reads its answer is cut off after WriteTimeout: the handler's write fails
// instead of blocking for ever.
func TestServerCutsOffAClientThatNeverReads(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 { // far more than the socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}), &serverOpts{WriteTimeout: 500 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	select {
	case err := <-writeErr:
		require.Error(t, err, "the handler wrote 256 MiB to a client that reads nothing")
	case <-time.After(10 * time.Second):
		t.Fatal("the server still writes to a client that never reads")
	}
}

// A kept-alive connection that sends no next request is closed after IdleTimeout.
func TestServerClosesIdleConnections(t *testing.T) {
	t.Parallel()
	addr := serveTest(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		&serverOpts{IdleTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, took := readUntilClosed(t, conn)
	require.Less(t, took, 5*time.Second)
}

// Headers over MaxHeaderBytes are refused with 431 before any handler runs.
func TestServerRefusesOversizedHeaders(t *testing.T) {
	t.Parallel()
	var handled atomic.Bool
	addr := serveTest(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled.Store(true) }), nil)
	req, err := http.NewRequestWithContext(t.Context(), "GET", "http://"+addr+"/", nil)
	require.NoError(t, err)
	req.Header.Set("X-Padding", strings.Repeat("a", 128<<10))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
	require.False(t, handled.Load())

	req.Header.Set("X-Padding", strings.Repeat("a", 32<<10)) // under the 64 KiB default
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
