package cli

import (
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// newEvidenceCmd: what a channel's clusters say of each version it told
// them (GET /api/v1/channels/{name}/evidence), the figures promotion and
// yank decide on.
func newEvidenceCmd(e *Env) *cobra.Command {
	var f clientFlags
	var version string
	cmd := &cobra.Command{
		Use:   "evidence CHANNEL [--version V]",
		Short: "Show what a channel's clusters say of each version it told them: told, adopted, stuck, halts",
		Long: "Show a channel's evidence: for each version it told its clusters in the last 30 days, how many active\n" +
			"clusters were told it, how many run it (adopted), how many still run an older one after fleet.stuck_after\n" +
			"(stuck), when it was first told, the median time to adopt and rollout halts. Needs a token with scope read\n" +
			"($TIDEMARK_TOKEN).",
		Args: cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var err error
			path := "/api/v1/channels/" + url.PathEscape(args[0]) + "/evidence"
			var list []openapi.Evidence
			var raw []byte
			if version != "" {
				var one openapi.Evidence
				raw, _, err = c.get(cmd.Context(), path, url.Values{"version": {version}}, &one)
				list = []openapi.Evidence{one}
			} else {
				var all openapi.EvidenceList
				raw, _, err = c.get(cmd.Context(), path, nil, &all)
				list = all.Versions
			}
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERSION\tTOLD\tADOPTED\tSTUCK\tFIRST TOLD\tADOPTION P50\tHALTS")
				for _, ev := range list {
					first, p50 := "-", "-"
					if ev.FirstTold != nil {
						first = Stamp(*ev.FirstTold)
					}
					if ev.AdoptionP50Seconds != nil {
						p50 = strconv.FormatFloat(*ev.AdoptionP50Seconds, 'f', -1, 64) + "s"
					}
					fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%d\n", ev.Version, ev.Told, ev.Adopted, ev.Stuck, first, p50, ev.Halts)
				}
				return tw.Flush()
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&version, "version", "", "one version or tag's evidence alone")
	return cmd
}
