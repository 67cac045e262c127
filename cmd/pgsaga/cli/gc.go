package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func (c *cli) gcCmd() *cobra.Command {
	return &cobra.Command{Use: "gc", Short: "todo", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return errors.New("not available yet") }}
}
