package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// Subcommands not written yet. Each moves to its own file when implemented.

func notYet(use, short string) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, RunE: func(*cobra.Command, []string) error {
		return errors.New(use + ": not implemented yet")
	}}
}
