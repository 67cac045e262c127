//go:build !pgsaga_chaos

package cli

import "context"

// pause does nothing: only test binaries (built with the pgsaga_chaos tag) stop at points.
func (c *cli) pause(context.Context, string) error { return nil }
