package recovery

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/pgsaga/pgsaga/saga"
)

// Config configures a Resumer.
type Config struct {
	// Client resumes the claimed keys; its operations decide which keys this resumer claims and
	// its Lease is the lease a claim takes. Required.
	Client *saga.Client
	// BatchSize is how many due keys one RunOnce resumes at most. Defaults to 100.
	BatchSize int
	// Concurrency is how many keys are resumed at once. Defaults to 4.
	Concurrency int
	// Logger receives one line per resume that did not complete. Defaults to the client's
	// logger.
	Logger *slog.Logger
}

// WithDefaults returns a copy of the config with every unset field given its default.
func (c *Config) WithDefaults() *Config {
	out := *c
	if out.BatchSize == 0 {
		out.BatchSize = 100
	}
	if out.Concurrency == 0 {
		out.Concurrency = 4
	}
	if out.Logger == nil && out.Client != nil {
		out.Logger = out.Client.Config().Logger
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return &out
}

func (c *Config) validate() error {
	if c.Client == nil {
		return errors.New("recovery: Config.Client is required")
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("recovery: Config.BatchSize must be at least 1, got %d", c.BatchSize)
	}
	if c.Concurrency < 1 {
		return fmt.Errorf("recovery: Config.Concurrency must be at least 1, got %d", c.Concurrency)
	}
	return nil
}
