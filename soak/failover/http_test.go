package failover

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// answer is one HTTP response.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a *answer) String() string { return http.StatusText(a.status) + " " + string(a.body) }

// httpClient's timeout is longer than any request may take here: a request stuck on a frozen
// primary waits for its phase's deadline (the lease).
var httpClient = &http.Client{Timeout: time.Minute}

// post sends a POST as tenant t1, actor alice, with key; an error is a network error (no answer).
func post(baseURL, path, key, body string) (*answer, error) {
	req, err := http.NewRequest(http.MethodPost, baseURL+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-Tenant-ID", "t1")
	req.Header.Set("X-Actor-ID", "alice")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	return send(req)
}

func get(t *testing.T, url string) *answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("X-Tenant-ID", "t1")
	req.Header.Set("X-Actor-ID", "alice")
	a, err := send(req)
	require.NoError(t, err)
	return a
}

func send(req *http.Request) (*answer, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: bytes.Clone(b)}, nil
}
