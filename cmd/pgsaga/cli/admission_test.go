package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// admissionTest serves an admission of total slots with share per party in front of a handler
// that holds each request until release is closed; a request's party is its X-Party header.
type admissionTest struct {
	addr             string
	release          chan struct{}
	entered, handled atomic.Int32
	bodies           sync.Map // X-Party → the body the handler read
}

func newAdmissionTest(t *testing.T, total, share int, opts *serverOpts) *admissionTest {
	t.Helper()
	a := &admissionTest{release: make(chan struct{})}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.entered.Add(1)
		body, err := io.ReadAll(r.Body)
		if err == nil {
			a.bodies.Store(r.Header.Get("X-Party"), string(body))
		}
		<-a.release
		a.handled.Add(1)
	})
	a.addr = serveTest(t, &admission{next: next, slots: newFairSlots(total, share), maxBody: 1 << 10,
		party: func(r *http.Request, _ []byte) string { return r.Header.Get("X-Party") }}, opts)
	return a
}

func (a *admissionTest) post(t *testing.T, party, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+a.addr+"/", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-Party", party)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req) // a request queued behind the limit fails the test
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var problem map[string]any
	_ = json.Unmarshal(b, &problem)
	return resp, problem
}

// With every slot taken by parties within their shares, one more request is answered 503 at
// once and never reaches the handler; a party at its share is answered 429 at once while the
// other parties get in; once requests finish, the slots serve again.
func TestAdmissionSharesTheSlots(t *testing.T) {
	t.Parallel()
	const total, share = 4, 2
	a := newAdmissionTest(t, total, share, nil)
	var wg sync.WaitGroup
	hold := func(party string) {
		wg.Go(func() {
			resp, _ := a.post(t, party, `{}`)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
	hold("greedy")
	hold("greedy")
	require.Eventually(t, func() bool { return a.entered.Load() == 2 }, 10*time.Second, time.Millisecond)

	begin := time.Now()
	resp, problem := a.post(t, "greedy", `{}`)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Less(t, time.Since(begin), 2*time.Second, "answered at once, not queued")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	require.Equal(t, "too_many_requests", problem["error"])
	require.Equal(t, float64(http.StatusTooManyRequests), problem["status"])

	hold("patient")
	hold("other")
	require.Eventually(t, func() bool { return a.entered.Load() == total }, 10*time.Second, time.Millisecond,
		"the other parties got their slots beside the greedy one")
	resp, problem = a.post(t, "newcomer", `{}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "every slot taken, the newcomer within its share")
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
	require.Equal(t, "temporarily_unavailable", problem["error"])
	require.Equal(t, int32(total), a.entered.Load(), "the refused requests never reached the handler")

	close(a.release)
	wg.Wait()
	resp, _ = a.post(t, "greedy", `{"again":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int32(total+1), a.handled.Load())
	body, _ := a.bodies.Load("greedy")
	require.Equal(t, `{"again":true}`, body, "the handler reads the body admission read")
}

// A request whose body trickles in takes no slot while it does: the slots stay free for others,
// and the slow request is cut at the server's read timeout.
func TestAdmissionReadsTheBodyBeforeTakingASlot(t *testing.T) {
	t.Parallel()
	a := newAdmissionTest(t, 1, 1, &serverOpts{ReadTimeout: time.Second})
	close(a.release)
	conns := make([]net.Conn, 3)
	for i := range conns {
		conn, err := net.Dial("tcp", a.addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Party: slow\r\nContent-Length: 100\r\n\r\n{")
		require.NoError(t, err)
		conns[i] = conn
	}
	time.Sleep(100 * time.Millisecond)
	resp, _ := a.post(t, "fast", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the only slot was free: the slow bodies hold none")
	for _, conn := range conns {
		_, took := readUntilClosed(t, conn)
		require.Less(t, took, 5*time.Second, "cut at the read timeout")
	}
	_, read := a.bodies.Load("slow")
	require.False(t, read, "the handler gets the read's error, never a partial body as a whole one")
}

// A body over the limit is left for the handler, which reads the bytes admission read and then
// the rest.
func TestAdmissionLeavesAnOversizedBodyToTheHandler(t *testing.T) {
	t.Parallel()
	a := newAdmissionTest(t, 1, 1, nil)
	close(a.release)
	big := strings.Repeat("x", 3<<10)
	resp, _ := a.post(t, "big", big)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, _ := a.bodies.Load("big")
	require.Equal(t, big, body)
}
