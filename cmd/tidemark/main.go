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
	"syscall"

	"github.com/spf13/cobra"
	"github.com/tidemark-dev/tidemark/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}

// Main runs the tidemark command line and returns the exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	e := &cli.Env{Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv}
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

func newRootCmd(e *cli.Env) *cobra.Command {
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
		newClusterCmd(e),
		newTUFCmd(e),
		newDemoCmd(e),
	)
	root.AddCommand(cli.Commands(e)...)
	explainMistakes(root)
	return root
}
