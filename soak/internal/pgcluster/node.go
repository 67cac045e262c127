package pgcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"time"

	"github.com/pgsaga/pgsaga/internal/testkit/childproc"
)

// Node is one Patroni node: a Patroni process and the PostgreSQL server it manages.
type Node struct {
	// Name is the node's Patroni member name ("node0", "node1"), also the application_name its
	// PostgreSQL uses when it streams as a standby.
	Name string
	// Port is the node's PostgreSQL port on 127.0.0.1.
	Port int
	// API is the base URL of the node's Patroni REST API.
	API string

	apiPort int
	dir     string // the node's directory: patroni.json, patroni.log, data/, its Unix socket
	patroni *childproc.Process
}

func (n *Node) String() string { return n.Name }

// URL is a connection URL for database dbname on this node alone, as superuser "postgres".
func (n *Node) URL(dbname string) string {
	q := url.Values{}
	q.Set("sslmode", "disable")
	q.Set("connect_timeout", strconv.Itoa(connectTimeoutSeconds))
	u := url.URL{Scheme: "postgres", User: url.User("postgres"), Host: "127.0.0.1:" + strconv.Itoa(n.Port),
		Path: "/" + dbname, RawQuery: q.Encode()}
	return u.String()
}

// LogPath is the file holding the node's Patroni log, PostgreSQL's included.
func (n *Node) LogPath() string { return filepath.Join(n.dir, "patroni.log") }

func (n *Node) dataDir() string    { return filepath.Join(n.dir, "data") }
func (n *Node) configPath() string { return filepath.Join(n.dir, "patroni.json") }

// postmaster returns the pid of the node's running postmaster.
func (n *Node) postmaster() (int, error) {
	pid, ok := postmasterPID(n.dataDir())
	if !ok {
		return 0, fmt.Errorf("PostgreSQL of %s is not running", n.Name)
	}
	return pid, nil
}

// restTimeout bounds one request to a Patroni REST API, but a switchover: a frozen node never
// answers.
const restTimeout = 2 * time.Second

// switchoverTimeout bounds POST /switchover, which Patroni answers once the switchover is done.
const switchoverTimeout = time.Minute

// status is what a node's GET /patroni says about itself (the fields we read).
type status struct {
	State string `json:"state"` // "running", "starting", "stopped", …
	Role  string `json:"role"`  // "master" (3.0.2) or "primary", "replica"
	// SyncStandby is whether the DCS names this standby synchronous: only then may it be
	// promoted in synchronous mode.
	SyncStandby bool `json:"sync_standby"`
	Timeline    int  `json:"timeline"`
	Replication []struct {
		ApplicationName string `json:"application_name"`
		State           string `json:"state"`      // "streaming", "catchup", …
		SyncState       string `json:"sync_state"` // "sync", "async", "potential", …
	} `json:"replication"`
}

func (s *status) primary() bool {
	return s.State == "running" && (s.Role == "master" || s.Role == "primary")
}
func (s *status) replica() bool { return s.State == "running" && s.Role == "replica" }

// status asks the node's Patroni how it is.
func (n *Node) status(ctx context.Context) (*status, error) {
	var st status
	if _, err := n.rest(ctx, http.MethodGet, "/patroni", nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// holdsLock asks the node's Patroni whether it is the leader and running as the primary (GET
// /primary answers 200 only then).
func (n *Node) holdsLock(ctx context.Context) bool {
	code, err := n.rest(ctx, http.MethodGet, "/primary", nil, nil)
	return err == nil && code == http.StatusOK
}

// rest sends a request to the node's REST API. A body is sent as JSON; the answer is decoded
// into out when out is not nil and the status is 2xx. It returns the status code.
func (n *Node) rest(ctx context.Context, method, path string, body, out any) (int, error) {
	timeout := restTimeout
	if path == "/switchover" {
		timeout = switchoverTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.API+path, r)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("asking %s's Patroni (%s %s): %w", n.Name, method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading %s's Patroni answer to %s %s: %w", n.Name, method, path, err)
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decoding %s's Patroni answer to %s %s: %w (%s)", n.Name, method, path, err, b)
		}
	}
	if out == nil && resp.StatusCode/100 != 2 && method != http.MethodGet {
		return resp.StatusCode, fmt.Errorf("%s's Patroni answered %s %s with %d: %s", n.Name, method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, nil
}
