package client

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// Config configures a [Client]. Only BaseURL is required.
type Config struct {
	// BaseURL is the server's root, e.g. "http://127.0.0.1:8080"; an
	// intent's Path is appended to it. Required.
	BaseURL string

	// Header holds request headers sent with every intent, replacing an
	// intent's header of the same name, and never stored with an intent:
	// credentials (Authorization: Bearer <API key>) belong here, not in a
	// queued intent, so that a queue file holds no secret and a rotated key
	// applies to intents queued before. It must not set Idempotency-Key.
	// Defaults to none.
	Header http.Header

	// HTTPClient sends the requests. Its own Timeout, if any, applies to each
	// attempt. Defaults to a client that does not follow redirects (a
	// redirected POST would be re-sent as a GET), so a 3xx is a definitive
	// answer.
	HTTPClient *http.Client

	// MaxAttempts bounds how many requests one Submit sends, first attempt
	// included. Defaults to 6.
	MaxAttempts int

	// MaxElapsed bounds the time one Submit spends from its first attempt:
	// no attempt or wait is started that would end past it, and a
	// Retry-After longer than what is left ends Submit with
	// an [*OutcomeUnknownError]. Defaults to 1 minute.
	MaxElapsed time.Duration

	// RetryDelay is the wait after the attempt-th attempt (from 1) when the
	// server gave no Retry-After; a server's Retry-After always wins, bounded
	// only by MaxElapsed. Defaults to FullJitter(BaseDelay, MaxDelay,
	// RandInt64N).
	RetryDelay func(attempt int) time.Duration

	// BaseDelay is the ceiling of the first default delay; the ceiling doubles
	// per retry up to MaxDelay, and each delay is uniform in [0, ceiling]
	// (see [FullJitter]). Defaults to 300ms.
	BaseDelay time.Duration

	// MaxDelay caps the default delay's ceiling. Defaults to 10s.
	MaxDelay time.Duration

	// RequestTimeout bounds one attempt, from sending the request to reading
	// the whole response; an attempt that times out is retried. Defaults to
	// 30s.
	RequestTimeout time.Duration

	// Logger receives one debug record per retry (key, attempt, status,
	// delay), never request bodies. Defaults to a logger that discards.
	Logger *slog.Logger

	// Now is the clock used for the MaxElapsed budget. Defaults to time.Now.
	Now func() time.Time

	// Sleep waits between attempts; it must return early with ctx's error
	// when ctx is done. Defaults to a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error

	// RandInt64N returns a uniform value in [0, n) and drives the default
	// delay's jitter. It must be safe for concurrent use. Defaults to
	// math/rand/v2.Int64N.
	RandInt64N func(n int64) int64
}

// withDefaults returns a copy of the config with every unset field set to its
// default. A nil config yields all defaults (and no BaseURL).
func (c *Config) withDefaults() *Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if out.MaxAttempts == 0 {
		out.MaxAttempts = 6
	}
	if out.MaxElapsed == 0 {
		out.MaxElapsed = time.Minute
	}
	if out.BaseDelay == 0 {
		out.BaseDelay = 300 * time.Millisecond
	}
	if out.MaxDelay == 0 {
		out.MaxDelay = 10 * time.Second
	}
	if out.RequestTimeout == 0 {
		out.RequestTimeout = 30 * time.Second
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Sleep == nil {
		out.Sleep = sleepContext
	}
	if out.RandInt64N == nil {
		out.RandInt64N = rand.Int64N
	}
	if out.RetryDelay == nil {
		out.RetryDelay = FullJitter(out.BaseDelay, out.MaxDelay, out.RandInt64N)
	}
	return &out
}

func (c *Config) validate() error {
	if c.BaseURL == "" {
		return errors.New("Config.BaseURL is required")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("Config.BaseURL must be an absolute http or https URL")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return errors.New("Config.BaseURL must not have a query or fragment")
	}
	if c.MaxAttempts < 1 {
		return errors.New("Config.MaxAttempts must be at least 1")
	}
	if c.Header.Get(headerIdempotencyKey) != "" {
		return errors.New("Config.Header must not set Idempotency-Key: each intent carries its own")
	}
	if c.MaxElapsed < 0 {
		return errors.New("Config.MaxElapsed must not be negative")
	}
	if c.BaseDelay < 0 {
		return errors.New("Config.BaseDelay must not be negative")
	}
	if c.MaxDelay < c.BaseDelay {
		return errors.New("Config.MaxDelay must be at least Config.BaseDelay")
	}
	if c.RequestTimeout < 0 {
		return errors.New("Config.RequestTimeout must not be negative")
	}
	return nil
}

// sleepContext waits for d or until ctx is done, whichever comes first.
func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
