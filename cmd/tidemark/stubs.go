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

func newServeCmd(e *env) *cobra.Command { return notYet("serve", "Run the service") }
func newMigrateCmd(e *env) *cobra.Command {
	return notYet("migrate", "Apply database migrations and exit")
}
func newConfigCmd(e *env) *cobra.Command   { return notYet("config", "Check a configuration file") }
func newClassifyCmd(e *env) *cobra.Command { return notYet("classify", "Classify tags read on stdin") }
func newSortCmd(e *env) *cobra.Command     { return notYet("sort", "Sort the valid tags read on stdin") }
func newTokenCmd(e *env) *cobra.Command    { return notYet("token", "Create, list and revoke API tokens") }
func newResolveCmd(e *env) *cobra.Command {
	return notYet("resolve", "Ask a server what to upgrade to")
}
func newChannelsCmd(e *env) *cobra.Command {
	return notYet("channels", "List channels and their versions")
}
func newPromoteCmd(e *env) *cobra.Command { return notYet("promote", "Pin a channel to a version") }
func newUnpinCmd(e *env) *cobra.Command {
	return notYet("unpin", "Let a channel follow its stream again")
}
func newBlockCmd(e *env) *cobra.Command   { return notYet("block", "Block a version") }
func newHistoryCmd(e *env) *cobra.Command { return notYet("history", "Show a channel's audit history") }
