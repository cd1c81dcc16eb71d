package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// Governance commands (CONTRACT section 15): schedule, changes, approve,
// reject, cancel and freeze.

func newScheduleCmd(e *Env) *cobra.Command {
	cmd := CommandGroup(&cobra.Command{
		Use:   "schedule",
		Short: "Schedule a pin or unpin of a channel for later; needs TIDEMARK_TOKEN with scope promote",
	})
	for _, action := range []string{"pin", "unpin"} {
		var f clientFlags
		var req openapi.ChangeRequest
		use, args := "pin CHANNEL VERSION --at TIME [--reason R]", cobra.ExactArgs(2)
		if action == "unpin" {
			use, args = "unpin CHANNEL --at TIME [--reason R]", cobra.ExactArgs(1)
		}
		sub := &cobra.Command{
			Use:     use,
			Short:   "Schedule a " + action + " at an RFC 3339 time",
			Example: "  tidemark schedule pin stable v1.34.1+k3s1 --at 2026-12-01T06:00:00Z --reason 'maintenance window'",
			Args:    args,
			RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, a []string) error {
				r := req
				r.Action = action
				at, err := absoluteTime(r.At, time.Now())
				if err != nil {
					return err
				}
				r.At = at
				if len(a) > 1 {
					r.Version = a[1]
				}
				var ch openapi.Change
				raw, _, err := c.do(cmd.Context(), http.MethodPost, "/api/v1/channels/"+url.PathEscape(a[0])+"/changes", nil, nil, r, &ch, "promote")
				if err != nil {
					return err
				}
				return f.output.print(e.Stdout, raw, func() error { return printChange(e, ch) })
			}),
		}
		f.register(sub)
		fl := sub.Flags()
		fl.StringVar(&req.At, "at", "", "when: RFC 3339 (2026-12-01T06:00:00Z) or from now (+2h, +30m, +1d); required")
		fl.StringVar(&req.Reason, "reason", "", "why (recorded in the audit history)")
		if action == "pin" {
			fl.BoolVar(&req.Force, "force", false, "skip the eligibility check (never the block check)")
			fl.BoolVar(&req.Rollback, "rollback", false, "may send clusters running a newer version down to this one")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

func printChange(e *Env, ch openapi.Change) error {
	what := ch.Action + " " + deref(ch.Version)
	when := "once approved"
	if ch.At != nil {
		when = "at " + Stamp(*ch.At)
	}
	switch ch.State {
	case "pending":
		action := ch.Action + " " + ch.Channel
		if v := deref(ch.Version); v != "" {
			action += " to " + v
		}
		got := 0
		for _, a := range ch.Approvals {
			if a.Approve {
				got++
			}
		}
		line := fmt.Sprintf("change %d: %s is pending (%d of %d %s)", ch.ID, action, got, ch.ApprovalsNeeded, plural(ch.ApprovalsNeeded, "approval"))
		if ch.At != nil {
			line += ", then " + when
		}
		_, err := fmt.Fprintln(e.Stdout, line)
		return err
	case "scheduled":
		_, err := fmt.Fprintf(e.Stdout, "change %d: %s of %s scheduled %s\n", ch.ID, strings.TrimSpace(what), ch.Channel, when)
		return err
	}
	line := fmt.Sprintf("change %d: %s of %s is %s", ch.ID, strings.TrimSpace(what), ch.Channel, ch.State)
	if ch.Outcome != "" {
		line += ": " + ch.Outcome
	}
	_, err := fmt.Fprintln(e.Stdout, line)
	return err
}

// absoluteTime reads --at: RFC 3339 as given, or "+<duration>" from now
// (Go durations, and d for days), as RFC 3339 for the API.
func absoluteTime(at string, now time.Time) (string, error) {
	rel, ok := strings.CutPrefix(at, "+")
	if !ok {
		return at, nil
	}
	var d time.Duration
	var err error
	if days, isDays := strings.CutSuffix(rel, "d"); isDays {
		var n int
		if n, err = strconv.Atoi(days); err == nil {
			d = time.Duration(n) * 24 * time.Hour
		}
	} else {
		d, err = time.ParseDuration(rel)
	}
	if err != nil || d <= 0 {
		return "", fmt.Errorf("--at %q: want an RFC 3339 time like 2026-12-01T06:00:00Z, or a time from now like +2h, +30m or +1d", at)
	}
	return now.Add(d).UTC().Format(time.RFC3339), nil
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func newChangesCmd(e *Env) *cobra.Command {
	var f clientFlags
	var state string
	cmd := &cobra.Command{
		Use:   "changes [--state S]",
		Short: "List scheduled and pending changes and what became of them (no token needed)",
		Args:  cobra.NoArgs,
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, _ []string) error {
			q := url.Values{}
			if state != "" {
				q.Set("state", state)
			}
			var list openapi.ChangeList
			raw, _, err := c.do(cmd.Context(), http.MethodGet, "/api/v1/changes", q, nil, nil, &list, "read")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tCHANNEL\tACTION\tVERSION\tAT\tSTATE\tBY\tAPPROVALS\tOUTCOME")
				for _, ch := range list.Changes {
					at := "-"
					if ch.At != nil {
						at = Stamp(*ch.At)
					}
					var ok []string
					for _, a := range ch.Approvals {
						if a.Approve {
							ok = append(ok, a.Identity)
						}
					}
					approvals := "-"
					if ch.ApprovalsNeeded > 0 {
						approvals = fmt.Sprintf("%d/%d %s", len(ok), ch.ApprovalsNeeded, strings.Join(ok, ","))
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ch.ID, ch.Channel, ch.Action, OrDash(deref(ch.Version)), at, ch.State,
						ch.RequestedBy, strings.TrimSpace(approvals), OrDash(ch.Outcome))
				}
				return tw.Flush()
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&state, "state", "", "scheduled, pending, done, failed, cancelled or rejected")
	return cmd
}

// newDecideCmd is approve, reject and cancel of a change by ID.
func newDecideCmd(e *Env, verb string) *cobra.Command {
	var f clientFlags
	var reason string
	short := map[string]string{"approve": "Approve a pending change", "reject": "Reject a pending change",
		"cancel": "Cancel a scheduled or pending change"}[verb]
	cmd := &cobra.Command{
		Use:   verb + " ID [--reason R]",
		Short: short + "; needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, a []string) error {
			method, path := http.MethodPost, "/api/v1/changes/"+url.PathEscape(a[0])+"/"+verb
			if verb == "cancel" {
				method, path = http.MethodDelete, "/api/v1/changes/"+url.PathEscape(a[0])
			}
			var ch openapi.Change
			raw, _, err := c.do(cmd.Context(), method, path, nil, nil, reasonBody(reason), &ch, "promote")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error { return printChange(e, ch) })
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history)")
	return cmd
}

func newFreezeCmd(e *Env) *cobra.Command {
	cmd := CommandGroup(&cobra.Command{
		Use:   "freeze",
		Short: "Declare, list and cancel freezes: channels keep their answer and refuse pins",
	})
	var af clientFlags
	var req openapi.FreezeRequest
	var channels string
	add := &cobra.Command{
		Use:     "add --channels GLOBS --from T --until T --reason R",
		Short:   "Freeze channels; needs TIDEMARK_TOKEN with scope admin",
		Example: "  tidemark freeze add --channels 'v1.*,stable' --from 2026-12-20T00:00:00Z --until 2027-01-04T00:00:00Z --reason 'year-end'",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := af.client(e)
			if err != nil {
				return err
			}
			r := req
			if channels != "" {
				r.Channels = strings.Split(channels, ",")
			}
			if r.From == "" {
				r.From = time.Now().UTC().Format(time.RFC3339)
			}
			var fz openapi.Freeze
			raw, _, err := c.do(cmd.Context(), http.MethodPost, "/api/v1/freezes", nil, nil, r, &fz, "admin")
			if err != nil {
				return err
			}
			return af.output.print(e.Stdout, raw, func() error {
				_, err := fmt.Fprintf(e.Stdout, "freeze %d of %s from %s until %s: %s\n", fz.ID, strings.Join(fz.Channels, ","), Stamp(fz.From), Stamp(fz.Until), fz.Reason)
				return err
			})
		},
	}
	af.register(add)
	add.Flags().StringVar(&channels, "channels", "", "channel names or globs, comma-separated (required)")
	add.Flags().StringVar(&req.From, "from", "", "when it begins (RFC 3339; default now)")
	add.Flags().StringVar(&req.Until, "until", "", "when it ends (RFC 3339; required)")
	add.Flags().StringVar(&req.Reason, "reason", "", "why: what a refused pin says (required)")

	var lf clientFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List freezes running or to come (no token needed)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lf.client(e)
			if err != nil {
				return err
			}
			var l openapi.FreezeList
			raw, _, err := c.do(cmd.Context(), http.MethodGet, "/api/v1/freezes", nil, nil, nil, &l, "read")
			if err != nil {
				return err
			}
			return lf.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tCHANNELS\tFROM\tUNTIL\tACTIVE\tBY\tREASON")
				for _, fz := range l.Freezes {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%v\t%s\t%s\n", fz.ID, strings.Join(fz.Channels, ","), Stamp(fz.From), Stamp(fz.Until), fz.Active, fz.CreatedBy, fz.Reason)
				}
				return tw.Flush()
			})
		},
	}
	lf.register(list)

	var rf clientFlags
	rm := &cobra.Command{
		Use:   "rm ID",
		Short: "End a freeze now; needs TIDEMARK_TOKEN with scope admin",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			c, err := rf.client(e)
			if err != nil {
				return err
			}
			if _, _, err := c.do(cmd.Context(), http.MethodDelete, "/api/v1/freezes/"+url.PathEscape(a[0]), nil, nil, nil, nil, "admin"); err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.Stdout, "freeze %s: cancelled\n", a[0])
			return err
		},
	}
	rf.register(rm)
	cmd.AddCommand(add, list, rm)
	return cmd
}
