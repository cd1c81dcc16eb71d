// Package cli is the tidemark command's client side: the commands that
// talk to a running service over its JSON API (resolve, channels,
// promote, unpin, block, risk, schedule, changes, approve, freeze,
// history, rollout, sources, versions, scan), their output in text or
// JSON, and the bits every command shares (Env, CommandGroup, Stamp).
// cmd/tidemark adds them beside the commands that run the service.
package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// Env is what a subcommand may touch of the outside world, so that tests can
// run Main in process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// CommandGroup makes cmd, a command that only holds subcommands, refuse an
// unknown subcommand with an error naming the ones it has (cobra prints
// the help and exits 0 for a command that cannot run itself). With no
// argument it prints its help.
func CommandGroup(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return fmt.Errorf("%s %s: unknown command; want %s", c.Name(), args[0], strings.Join(names, ", "))
	}
	return cmd
}

func Stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// Commands are the API client commands, for the root command.
func Commands(e *Env) []*cobra.Command {
	return []*cobra.Command{
		newResolveCmd(e),
		newChannelsCmd(e),
		newPromoteCmd(e),
		newUnpinCmd(e),
		newBlockCmd(e),
		newUnblockCmd(e),
		newRiskCmd(e),
		newScheduleCmd(e),
		newChangesCmd(e),
		newDecideCmd(e, "approve"),
		newDecideCmd(e, "reject"),
		newDecideCmd(e, "cancel"),
		newFreezeCmd(e),
		newHistoryCmd(e),
		newEvidenceCmd(e),
		newHoldCmd(e),
		newRolloutCmd(e),
		newSourcesCmd(e),
		newVersionsCmd(e),
		newLifecycleCmd(e),
		newScanCmd(e),
	}
}
