package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// newRiskCmd is `tidemark risk add|list|rm`: known risks of a source
// (CONTRACT section 13).
func newRiskCmd(e *Env) *cobra.Command {
	cmd := CommandGroup(&cobra.Command{
		Use:   "risk",
		Short: "Declare, list and remove known risks: upgrade edges no cluster is sent over",
	})
	cmd.AddCommand(newRiskAddCmd(e), newRiskListCmd(e), newRiskRmCmd(e))
	return cmd
}

func riskPath(source string, name ...string) string {
	p := "/api/v1/sources/" + url.PathEscape(source) + "/risks"
	for _, n := range name {
		p += "/" + url.PathEscape(n)
	}
	return p
}

func newRiskAddCmd(e *Env) *cobra.Command {
	var f clientFlags
	var req openapi.RiskRequest
	cmd := &cobra.Command{
		Use:   "add SOURCE NAME --from C --to C --message M [--url U] [--cluster RE]...",
		Short: "Declare (or replace) a known risk; needs TIDEMARK_TOKEN with scope promote (not limited to channels)",
		Example: `  tidemark risk add k3s EtcdMigration --from '<1.33.5' --to '>=1.34.0' \
    --message 'etcd migration loses leases' --url https://example.com/etcd`,
		Args: cobra.ExactArgs(2),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var r openapi.Risk
			raw, _, err := c.do(cmd.Context(), http.MethodPut, riskPath(args[0], args[1]), nil, nil, req, &r, "promote")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				_, err := fmt.Fprintf(e.Stdout, "%s risk %s: %s -> %s declared\n", r.Source, r.Name, r.From, r.To)
				return err
			})
		}),
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&req.From, "from", "", `constraint on the version upgraded from ("*" for any; required)`)
	fl.StringVar(&req.To, "to", "", "constraint on the version upgraded to (required)")
	fl.StringVar(&req.Message, "message", "", "what goes wrong, for a person (required)")
	fl.StringVar(&req.URL, "url", "", "where to read more")
	fl.StringArrayVar(&req.Clusters, "cluster", nil, "a regexp on cluster IDs the risk applies to (repeat; none: every cluster)")
	fl.StringVar(&req.Reason, "reason", "", "why (recorded in the audit history)")
	return cmd
}

func newRiskListCmd(e *Env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "list SOURCE",
		Short: "List a source's known risks",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var list openapi.RiskList
			raw, _, err := c.get(cmd.Context(), riskPath(args[0]), nil, &list)
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tFROM\tTO\tCLUSTERS\tBY\tMESSAGE")
				for _, r := range list.Risks {
					clusters := "all"
					if len(r.Clusters) > 0 {
						clusters = strings.Join(r.Clusters, ",")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.From, r.To, clusters, r.CreatedBy, r.Message)
				}
				return tw.Flush()
			})
		}),
	}
	f.register(cmd)
	return cmd
}

func newRiskRmCmd(e *Env) *cobra.Command {
	var f clientFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "rm SOURCE NAME [--reason R]",
		Short: "Remove a known risk; needs TIDEMARK_TOKEN with scope promote (not limited to channels)",
		Args:  cobra.ExactArgs(2),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var err error
			if _, _, err := c.do(cmd.Context(), http.MethodDelete, riskPath(args[0], args[1]), nil, nil, reasonBody(reason), nil, "promote"); err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.Stdout, "%s risk %s: removed\n", args[0], args[1])
			return err
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history)")
	return cmd
}
