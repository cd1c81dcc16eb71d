package cli

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// newHoldCmd: the holds a yank puts on versions
// (DELETE /api/v1/sources/{s}/versions/{v}/hold lifts one).
func newHoldCmd(e *Env) *cobra.Command {
	hold := &cobra.Command{
		Use:   "hold",
		Short: "Lift the hold a yank put on a version (so that promotions may take it again)",
	}
	var f clientFlags
	var reason string
	lift := &cobra.Command{
		Use:   "lift SOURCE VERSION [--reason R]",
		Short: "Lift a version's evidence hold; needs TIDEMARK_TOKEN with scope admin",
		Long: "Lift the hold a yank put on a version when its clusters got stuck: promotions may take it again.\n" +
			"The yank's other effects stay (a halted rollout stays halted, a pin stays). Audited with --reason.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			path := "/api/v1/sources/" + url.PathEscape(args[0]) + "/versions/" + url.PathEscape(args[1])
			var before openapi.Version
			if _, _, err := c.get(cmd.Context(), path, nil, &before); err != nil {
				return err
			}
			var after openapi.Version
			raw, _, err := c.do(cmd.Context(), http.MethodDelete, path+"/hold", nil, nil, reasonBody(reason), &after, "admin")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				state := "hold lifted: promotions may take it again"
				if before.Held == nil {
					state = "was not held"
				}
				_, err := fmt.Fprintf(e.Stdout, "%s %s: %s\n", args[0], before.Version, state)
				return err
			})
		},
	}
	f.register(lift)
	lift.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history)")
	hold.AddCommand(lift)
	return hold
}
