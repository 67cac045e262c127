// Package promreg registers Prometheus collectors so that several pgsaga components can share
// one registry (serve with an in-process worker, two clients in one process).
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers c, or returns the collector of the same type already registered under its
// names.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// Into registers *c as Register does, and sets *c to the collector that serves its names: *c
// itself, or the one of the same type registered before.
func Into[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	var err error
	*c, err = Register(reg, *c)
	return err
}
