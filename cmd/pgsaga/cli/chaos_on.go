//go:build pgsaga_chaos

package cli

import (
	"context"

	"github.com/pgsaga/pgsaga/internal/testkit/chaos"
)

// pause holds the command at point while $PGSAGA_CHAOS_PAUSE names it (chaos.Pause), so that a
// test can break something at that exact moment. Only binaries built with the pgsaga_chaos tag
// (the tests') have it.
func (c *cli) pause(ctx context.Context, point string) error {
	return chaos.Pause(ctx, c.env.Getenv, point, c.env.Stderr)
}
