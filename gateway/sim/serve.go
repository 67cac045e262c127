package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long a stopping server waits for requests in flight.
const shutdownGrace = 5 * time.Second

// The limits of the simulator's HTTP server, those of pgsaga's own servers: a slow or hostile
// client cannot hold its connections. A charge answered after a latency fault gets its write
// deadline moved past that latency (see handleCharge), so a fault never turns into a lost
// answer by way of the write timeout.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = time.Minute
	idleTimeout       = time.Minute
	maxHeaderBytes    = 64 << 10
)

// ListenAndServe runs a new simulator configured by cfg over HTTP on addr (such as
// "127.0.0.1:9090") until ctx is cancelled, then stops cleanly and returns nil. It returns
// an error when cfg is invalid or addr cannot be bound. This is the `pgsaga gateway-sim`
// command.
func ListenAndServe(ctx context.Context, addr string, cfg *Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid gateway simulator config: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", addr, err)
	}
	return New(cfg).Serve(ctx, ln)
}

// newServer is the simulator's HTTP server, with every timeout set and headers capped; its
// requests' contexts end with ctx.
func (s *Simulator) newServer(ctx context.Context) *http.Server {
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
}

// Serve answers the wire format on ln until ctx is cancelled, then stops accepting, lets
// requests in flight finish for a few seconds, closes ln and returns nil. Requests waiting
// out a latency fault are abandoned when ctx ends (their charges stay in the ledger).
func (s *Simulator) Serve(ctx context.Context, ln net.Listener) error {
	srv := s.newServer(ctx)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("gateway simulator stopped: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("gateway simulator stopped: %w", err)
	}
	return nil
}
