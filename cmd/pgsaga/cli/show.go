package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

func (c *cli) showCmd() *cobra.Command {
	return &cobra.Command{Use: "show", Short: "todo", Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return errors.New("not available yet") }}
}
