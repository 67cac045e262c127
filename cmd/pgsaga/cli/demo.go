package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func (c *cli) demoCmd() *cobra.Command {
	return &cobra.Command{Use: "demo", Short: "todo", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return errors.New("not available yet") }}
}
