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

// Serve answers the wire format on ln until ctx is cancelled, then stops accepting, lets
// requests in flight finish for a few seconds, closes ln and returns nil. Requests waiting
// out a latency fault are abandoned when ctx ends (their charges stay in the ledger).
func (s *Simulator) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
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
