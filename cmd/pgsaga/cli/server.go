package cli

import (
	"log/slog"
	"net/http"
	"time"
)

// serverOpts are the limits of one of the tool's own HTTP servers (serve, the worker's metrics
// server, the console), so that a slow or hostile client cannot hold its connections. A nil
// *serverOpts takes every default.
type serverOpts struct {
	// ReadHeaderTimeout bounds reading a request's headers: a client that sends them slowly
	// (slowloris) is cut off. Defaults to 10s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included. Defaults to 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end of its response:
	// a client that never reads its answer is cut off. It must outlast the slowest handler,
	// or a finished request loses its answer (a retry then replays it). Defaults to 60s.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next request. Defaults to 60s.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's headers; a request over it is refused with 431.
	// Defaults to 64 KiB.
	MaxHeaderBytes int
	// Logger receives the server's own errors (accept, TLS); nil discards them.
	Logger *slog.Logger
}

func (o *serverOpts) withDefaults() *serverOpts {
	out := serverOpts{}
	if o != nil {
		out = *o
	}
	if out.ReadHeaderTimeout == 0 {
		out.ReadHeaderTimeout = 10 * time.Second
	}
	if out.ReadTimeout == 0 {
		out.ReadTimeout = 30 * time.Second
	}
	if out.WriteTimeout == 0 {
		out.WriteTimeout = time.Minute
	}
	if out.IdleTimeout == 0 {
		out.IdleTimeout = time.Minute
	}
	if out.MaxHeaderBytes == 0 {
		out.MaxHeaderBytes = 64 << 10
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

// newHTTPServer is an http.Server for handler with opts' limits: every timeout set and headers
// capped. The caller serves it on its listener and shuts it down.
func newHTTPServer(handler http.Handler, opts *serverOpts) *http.Server {
	opts = opts.withDefaults()
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
}
