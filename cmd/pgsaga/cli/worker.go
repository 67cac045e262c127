package cli

import (
	"context"
	"errors"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/pgsaga/pgsaga/saga"
)

type workerParams struct {
	pool       *pgxpool.Pool
	client     *saga.Client
	logger     *slog.Logger
	registerer prometheus.Registerer
}

type runningWorker struct{}

func (w *runningWorker) stop(ctx context.Context) {}

func (c *cli) startWorker(ctx context.Context, p *workerParams) (*runningWorker, error) {
	return nil, errors.New("the worker is not available in this build yet")
}

func (c *cli) workerCmd() *cobra.Command {
	return &cobra.Command{Use: "worker", Short: "Run the recovery worker", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return errors.New("not available yet") }}
}
