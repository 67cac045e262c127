// Package deps pins the modules the project builds on while the packages that use them are written.
// It is removed once every dependency has a real importer.
package deps

import (
	_ "github.com/cenkalti/backoff/v4"
	_ "github.com/dunglas/httpsfv"
	_ "github.com/google/uuid"
	_ "github.com/gowebpki/jcs"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/riverqueue/river"
	_ "github.com/riverqueue/river/riverdriver/riverpgxv5"
	_ "github.com/riverqueue/river/rivermigrate"
	_ "github.com/spf13/cobra"
	_ "github.com/stretchr/testify/require"
	_ "github.com/stripe/stripe-go/v85"
	_ "go.etcd.io/bbolt"
)
