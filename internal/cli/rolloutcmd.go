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

// newRolloutCmd is `tidemark rollout status|pause|resume|advance|halt`.
func newRolloutCmd(e *Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Show or control a channel's staged rollout",
	}
	status := &cobra.Command{
		Use:   "status CHANNEL",
		Short: "Show a channel's rollout: state, step, percent, and the fleet's clusters on each side",
		Args:  cobra.ExactArgs(1),
	}
	var f clientFlags
	status.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := f.client(e)
		if err != nil {
			return err
		}
		var ro openapi.Rollout
		raw, _, err := c.get(cmd.Context(), "/api/v1/channels/"+url.PathEscape(args[0])+"/rollout", nil, &ro)
		if err != nil {
			return err
		}
		return f.output.print(e.Stdout, raw, func() error { return printRollout(e, ro) })
	}
	f.register(status)
	cmd.AddCommand(status)
	for _, a := range []struct{ name, short string }{
		{"pause", "Hold a rollout at its current step"},
		{"resume", "Continue a paused or halted rollout"},
		{"advance", "Move a rollout to its next step now"},
		{"halt", "Send the rollout's previous version to every cluster not yet on its new one (--rollback: to every cluster) until resumed"},
	} {
		cmd.AddCommand(newRolloutControlCmd(e, a.name, a.short))
	}
	return CommandGroup(cmd)
}

func newRolloutControlCmd(e *Env, action, short string) *cobra.Command {
	var f clientFlags
	var reason string
	var rollback bool
	use := action + " CHANNEL --reason R"
	if action == "halt" {
		use += " [--rollback]"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short + "; needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return fmt.Errorf("rollout %s needs --reason: it goes in the channel's audit history", action)
			}
			c, err := f.client(e)
			if err != nil {
				return err
			}
			var ro openapi.Rollout
			path := "/api/v1/channels/" + url.PathEscape(args[0]) + "/rollout/" + action
			raw, _, err := c.do(cmd.Context(), http.MethodPost, path, nil, nil, openapi.RolloutControlRequest{Reason: reason, Rollback: rollback}, &ro, "promote")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error { return printRollout(e, ro) })
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history; required)")
	if action == "halt" {
		cmd.Flags().BoolVar(&rollback, "rollback", false, "send clusters already on the rollout's version back too (without it they keep it)")
	}
	return cmd
}

func printRollout(e *Env, ro openapi.Rollout) error {
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tFROM\tTO\tSTATE\tSTEP\tPERCENT\tNEXT STEP\tCLUSTERS ON TO\tCLUSTERS ON FROM")
	next, onTo, onFrom := "-", "-", "-"
	if ro.NextStepAt != nil {
		next = Stamp(*ro.NextStepAt)
	}
	if ro.Clusters != nil {
		onTo, onFrom = fmt.Sprint(ro.Clusters.To), fmt.Sprint(ro.Clusters.From)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%d%%\t%s\t%s\t%s\n", ro.Channel, ro.From, ro.To, ro.State,
		ro.Step, len(ro.Steps), ro.Percent, next, onTo, onFrom)
	return tw.Flush()
}
