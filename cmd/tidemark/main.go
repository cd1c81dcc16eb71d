// Command tidemark is the Tidemark service and its command-line client.
//
// main only parses flags and wires packages together: the domain is in
// resolver/, the registry side in indexer/, Postgres in store/, HTTP in server/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// env is what a subcommand may touch of the outside world, so that tests can
// run Main in process.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// Main runs the tidemark command line and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := newRootCmd(e)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		fmt.Fprintf(stderr, "tidemark: %v\n", err)
		return 1
	}
	return 0
}

// exitError ends the command with a code after the command printed its own message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "tidemark",
		Short:         "Release channels and version resolution from registry tags",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionLine(),
	}
	// --version prints the same line as the version command.
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(
		newVersionCmd(e),
		newServeCmd(e),
		newMigrateCmd(e),
		newConfigCmd(e),
		newClassifyCmd(e),
		newSortCmd(e),
		newTokenCmd(e),
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
		newRolloutCmd(e),
		newSourcesCmd(e),
		newVersionsCmd(e),
		newScanCmd(e),
		newDemoCmd(e),
	)
	return root
}

// commandGroup makes cmd, a command that only holds subcommands, refuse an
// unknown subcommand with an error naming the ones it has (cobra prints
// the help and exits 0 for a command that cannot run itself). With no
// argument it prints its help.
func commandGroup(cmd *cobra.Command) *cobra.Command {
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
