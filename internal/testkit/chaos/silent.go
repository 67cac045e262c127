package chaos

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// SilentSockets dials database connections (pgx's ConnConfig.DialFunc) whose sockets, once
// their side closes them, go silent instead of away: nothing more is sent or read on them, and
// the server hears them end only when the test calls HangUp. That is the time between a
// process's death and the server noticing it, which is a moment for a local socket and up to
// the TCP keepalive's timeout for a host that went away: the dead session's transaction, and
// its locks, live on until then. It is safe for concurrent use; the zero value is ready.
type SilentSockets struct {
	mu     sync.Mutex
	silent []net.Conn
	hungUp bool
}

// Dial opens a socket as pgx would (network and address as pgx resolved them).
func (s *SilentSockets) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &silentSocket{Conn: conn, sockets: s}, nil
}

// HangUp ends every socket closed so far on the server's side too, and every one closed from
// now on at once.
func (s *SilentSockets) HangUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hungUp = true
	for _, conn := range s.silent {
		_ = conn.Close()
	}
	s.silent = nil
}

// silence keeps conn open towards the server until HangUp.
func (s *SilentSockets) silence(conn net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hungUp {
		_ = conn.Close()
		return
	}
	s.silent = append(s.silent, conn)
}

// silentSocket is one socket of SilentSockets: once closed, every call fails as on a closed
// socket, while the socket underneath stays open.
type silentSocket struct {
	net.Conn
	sockets *SilentSockets
	closed  atomic.Bool
}

func (c *silentSocket) Read(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Read(b)
}

func (c *silentSocket) Write(b []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

func (c *silentSocket) SetDeadline(t time.Time) error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	return c.Conn.SetDeadline(t)
}

func (c *silentSocket) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *silentSocket) SetWriteDeadline(t time.Time) error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	return c.Conn.SetWriteDeadline(t)
}

// Close silences the socket: a read blocked on it returns (its deadline passes), and the server
// hears nothing until HangUp.
func (c *silentSocket) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	_ = c.Conn.SetDeadline(time.Unix(1, 0))
	c.sockets.silence(c.Conn)
	return nil
}
