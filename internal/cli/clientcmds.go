package cli

import (
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// The read commands: each prints one API answer, as a table for people or
// (-o json|yaml) as the API's own JSON.

func newResolveCmd(e *Env) *cobra.Command {
	var f clientFlags
	var source, current, stream, channel, target string
	var builds bool
	cmd := &cobra.Command{
		Use:   "resolve (--source S | --channel C) --current V [--stream X] [--target T] [--builds]",
		Short: "Ask a server what to upgrade to, and by what path (a dry run)",
		Args:  cobra.NoArgs,
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, _ []string) error {
			if current == "" || (source == "" && channel == "") {
				return fmt.Errorf("resolve needs --current and --source (or --channel, which names its source)")
			}
			if stream != "" && channel != "" {
				return fmt.Errorf("--stream and --channel: give one, not both")
			}
			q := url.Values{"current": {current}}
			for k, v := range map[string]string{"source": source, "stream": stream, "channel": channel, "target": target} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if builds {
				q.Set("builds", "true")
			}
			var a openapi.ResolveAnswer
			raw, _, err := c.get(cmd.Context(), "/api/v1/resolve", q, &a)
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error { printResolve(e, c, a); return nil })
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&source, "source", "", "source name (required unless --channel is given)")
	cmd.Flags().StringVar(&current, "current", "", "the version you run now (required)")
	cmd.Flags().StringVar(&stream, "stream", "", "released, proposed, devel or testing (default: the channel's, else released)")
	cmd.Flags().StringVar(&channel, "channel", "", "follow this channel's stream and filters")
	cmd.Flags().StringVar(&target, "target", "", "ask for this exact version")
	cmd.Flags().BoolVar(&builds, "builds", false, "offer juju development builds (build numbers)")
	return cmd
}

// printResolve prints the answer the way `juju upgrade-controller --dry-run`
// does: what is available, the next step, the path, and how to apply it.
func printResolve(e *Env, c *apiClient, a openapi.ResolveAnswer) {
	w := e.Stdout
	fmt.Fprintf(w, "current version: %s (source %s, stream %s)\n", a.Current, a.Source, a.Stream)
	if a.Warning != nil { // what a cluster running it is told
		fmt.Fprintf(w, "warning: %s\n", *a.Warning)
	}
	if len(a.Available) > 0 {
		fmt.Fprintln(w, "available versions:")
		for _, v := range a.Available {
			fmt.Fprintf(w, "    %s\n", v)
		}
	}
	if a.Target == nil {
		// The reason already starts "no upgrades available" and says why
		// any available version above cannot be reached yet.
		fmt.Fprintln(w, a.Reason)
		return
	}
	// The path starts at the target; current is shown as where it leaves
	// from, so the first hop and the target are visibly the same version.
	fmt.Fprintf(w, "next step (target):\n    %s\n", *a.Target)
	steps := append([]string{a.Current + " (current)"}, a.Path...)
	fmt.Fprintf(w, "upgrade path, one minor at a time:\n    %s\n", strings.Join(steps, " -> "))
	fmt.Fprintf(w, "reason: %s\n", a.Reason)
	ch := deref(a.Channel)
	if ch == "" {
		ch = "CHANNEL"
	}
	fmt.Fprintf(w, "promote it with:\n    tidemark promote --server %s %s %s --reason \"...\"\n", c.base.Redacted(), ch, *a.Target)
}

func newChannelsCmd(e *Env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "channels [CHANNEL]",
		Short: "List channels and the version each serves (or one channel)",
		Args:  cobra.MaximumNArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			list, raw, err := oneOrAll[openapi.Channel](cmd.Context(), c, "/api/v1/channels", args)
			if err != nil {
				return err
			}
			// Pending changes (no token needed): a channel waiting for
			// approvals says so. A server without governance just has none.
			var pending openapi.ChangeList
			if _, _, err := c.get(cmd.Context(), "/api/v1/changes", url.Values{"state": {"pending"}}, &pending); err != nil {
				pending.Changes = nil
			}
			return f.output.print(e.Stdout, raw, func() error { return channelTable(e, list, pending.Changes) })
		}),
	}
	f.register(cmd)
	return cmd
}

func channelTable(e *Env, list []openapi.Channel, pending []openapi.Change) error {
	waiting := map[string][]string{}
	for _, c := range pending {
		what := c.Action
		if v := deref(c.Version); v != "" {
			what += " " + v
		}
		waiting[c.Channel] = append(waiting[c.Channel], fmt.Sprintf("change %d: %s", c.ID, what))
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tSOURCE\tSTREAM\tVERSION\tPINNED\tUPDATED\tPENDING")
	for _, ch := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ch.Name, ch.Source, ch.Stream, OrDash(deref(ch.Version)), yesNo(ch.Pinned),
			stampPtr(ch.UpdatedAt), OrDash(strings.Join(waiting[ch.Name], "; ")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// VERSION is the channel's target; during a rollout a channel URL
	// answers some requests another one: say which, under the table.
	for _, ch := range list {
		if note := ch.Rollout.Note(); note != "" {
			fmt.Fprintf(e.Stdout, "%s: %s\n", ch.Name, note)
		}
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newSourcesCmd(e *Env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "sources [SOURCE]",
		Short: "List sources and how their indexing went (or one source)",
		Args:  cobra.MaximumNArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			list, raw, err := oneOrAll[openapi.Source](cmd.Context(), c, "/api/v1/sources", args)
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SOURCE\tSCHEME\tTAGS\tUNPARSED\tVERSIONS\tLAST SCAN\tOUTCOME\tIMAGE")
				for _, s := range list {
					versions := 0
					for _, n := range s.Versions {
						versions += n
					}
					last, outcome := "-", "never"
					if s.LastScan != nil {
						last, outcome = Stamp(s.LastScan.Started), s.LastScan.Outcome
						if s.LastScan.Error != nil {
							outcome += ": " + *s.LastScan.Error
						}
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", s.Name, OrDash(s.Scheme), s.Tags, s.Unparsed, versions, last, outcome, s.Image)
				}
				return tw.Flush()
			})
		}),
	}
	f.register(cmd)
	return cmd
}

// versionNote says why channels skip a version listed in their stream.
func versionNote(v openapi.Version) string {
	switch {
	case v.Blocked:
		return "blocked: no channel serves it"
	case !v.Servable:
		return "held by a release gate"
	case v.DevBuild:
		return "dev build: channels skip it unless builds: true"
	}
	return ""
}

func newVersionsCmd(e *Env) *cobra.Command {
	var f clientFlags
	var stream, constraint string
	cmd := &cobra.Command{
		Use:   "versions SOURCE [--stream X] [--constraint C]",
		Short: "List a source's versions, ascending",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			q := url.Values{}
			if stream != "" {
				q.Set("stream", stream)
			}
			if constraint != "" {
				q.Set("constraint", constraint)
			}
			var list []openapi.Version
			raw, _, err := c.get(cmd.Context(), "/api/v1/sources/"+url.PathEscape(args[0])+"/versions", q, &list)
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERSION\tTAG\tSTREAM\tBLOCKED\tDIGEST\tNOTE")
				for _, v := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Version, v.Tag, v.Stream, yesNo(v.Blocked), OrDash(deref(v.Digest)), OrDash(versionNote(v)))
				}
				return tw.Flush()
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&stream, "stream", "", "only versions served on this stream (streams nest: devel includes released)")
	cmd.Flags().StringVar(&constraint, "constraint", "", "only versions matching this semver constraint, e.g. '~2.9'")
	return cmd
}

func newHistoryCmd(e *Env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "history CHANNEL",
		Short: "Show a channel's audit history, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var events []openapi.AuditEvent
			raw, _, err := c.get(cmd.Context(), "/api/v1/channels/"+url.PathEscape(args[0])+"/history", nil, &events)
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "AT\tACTOR\tACTION\tFROM\tTO\tREASON")
				for _, ev := range events {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", Stamp(ev.At), ev.Actor, ev.Action, OrDash(deref(ev.From)), OrDash(deref(ev.To)), OrDash(ev.Reason))
				}
				return tw.Flush()
			})
		}),
	}
	f.register(cmd)
	return cmd
}
