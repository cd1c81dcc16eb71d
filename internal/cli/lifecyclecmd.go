package cli

import (
	"fmt"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// newLifecycleCmd prints a source's lines as GET
// /api/v1/sources/{s}/lifecycle gives them, newest first.
func newLifecycleCmd(e *Env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "lifecycle SOURCE",
		Short: "List a source's lines: released, deprecated from, end, and clusters on each",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			var lc openapi.SourceLifecycle
			raw, _, err := c.get(cmd.Context(), "/api/v1/sources/"+url.PathEscape(args[0])+"/lifecycle", nil, &lc)
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "LINE\tCLASSIFICATION\tRELEASED\tDEPRECATED FROM\tEND\tCLUSTERS")
				for _, l := range lc.Lines {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", l.Line, l.Classification, day(l.Release), day(l.DeprecatedFrom), day(l.End), l.Clusters)
				}
				return tw.Flush()
			})
		},
	}
	f.register(cmd)
	return cmd
}

// day is t's date (UTC), or "-".
func day(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format(time.DateOnly)
}
