package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// versionRef decodes a version given either as a string or as a version
// object, so the CLI reads both shapes the API uses.
type versionRef string

func (v *versionRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = versionRef(s)
		return nil
	}
	var o struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*v = versionRef(o.Version)
	return nil
}

type resolveAnswer struct {
	Source    string       `json:"source"`
	Current   versionRef   `json:"current"`
	Stream    string       `json:"stream"`
	Channel   string       `json:"channel,omitempty"`
	Available []versionRef `json:"available"`
	Target    *versionRef  `json:"target"`
	Path      []versionRef `json:"path"`
	Reason    string       `json:"reason"`
}

func newResolveCmd(e *env) *cobra.Command {
	var f clientFlags
	var source, current, stream, channel, target string
	var builds bool
	cmd := &cobra.Command{
		Use:   "resolve --source S --current V [--stream X | --channel C] [--target T]",
		Short: "Ask a server what to upgrade to, and by what path (a dry run)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
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
			var raw json.RawMessage
			if _, err := c.call(cmd.Context(), http.MethodGet, "/api/v1/resolve", q, nil, nil, &raw, ""); err != nil {
				return err
			}
			if f.output == "json" {
				_, err := fmt.Fprintf(e.stdout, "%s\n", raw)
				return err
			}
			var a resolveAnswer
			if err := json.Unmarshal(raw, &a); err != nil {
				return fmt.Errorf("resolve: answer is not the JSON expected: %w", err)
			}
			printResolve(e, c, a, channel)
			return nil
		},
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
func printResolve(e *env, c *apiClient, a resolveAnswer, channel string) {
	w := e.stdout
	fmt.Fprintf(w, "current version: %s (source %s, stream %s)\n", a.Current, a.Source, a.Stream)
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
	steps := []string{string(a.Current) + " (current)"}
	for _, v := range a.Path {
		steps = append(steps, string(v))
	}
	fmt.Fprintf(w, "upgrade path, one minor at a time:\n    %s\n", strings.Join(steps, " -> "))
	fmt.Fprintf(w, "reason: %s\n", a.Reason)
	ch := channel
	if ch == "" {
		ch = "CHANNEL"
	}
	fmt.Fprintf(w, "promote it with:\n    tidemark promote --server %s %s %s --reason \"...\"\n", c.base.Redacted(), ch, *a.Target)
}

type channelObject struct {
	Name       string  `json:"name"`
	Source     string  `json:"source"`
	Stream     string  `json:"stream"`
	Constraint string  `json:"constraint"`
	Pinned     bool    `json:"pinned"`
	Version    *string `json:"version"`
	Tag        *string `json:"tag"`
	Digest     *string `json:"digest"`
	UpdatedAt  *string `json:"updated_at"`
}

func newChannelsCmd(e *env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "channels",
		Short: "List channels and the version each serves",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			var list []channelObject
			if _, err := c.call(cmd.Context(), http.MethodGet, "/api/v1/channels", nil, nil, nil, &list, ""); err != nil {
				return err
			}
			if f.output == "json" {
				return writeJSON(e.stdout, list)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CHANNEL\tSOURCE\tSTREAM\tVERSION\tPINNED\tUPDATED")
			for _, ch := range list {
				pinned := "no"
				if ch.Pinned {
					pinned = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ch.Name, ch.Source, ch.Stream, orDash(deref(ch.Version)), pinned, orDash(stampOf(deref(ch.UpdatedAt))))
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	return cmd
}

// stampOf prints an RFC 3339 time to the second, like the history table.
func stampOf(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return t.UTC().Format(time.RFC3339)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newPromoteCmd(e *env) *cobra.Command {
	var f clientFlags
	var reason string
	var force bool
	cmd := &cobra.Command{
		Use:   "promote CHANNEL VERSION --reason R",
		Short: "Pin a channel to a version (a promotion or a rollback); needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			if strings.TrimSpace(reason) == "" {
				return fmt.Errorf("promote needs --reason: it goes in the channel's audit history")
			}
			name, version := args[0], args[1]
			// Read first so the write is conditional on what we saw: a
			// concurrent change makes the server answer 412, not overwrite it.
			var before channelObject
			hdr, err := c.call(cmd.Context(), http.MethodGet, "/api/v1/channels/"+url.PathEscape(name), nil, nil, nil, &before, "")
			if err != nil {
				return err
			}
			var after channelObject
			body := map[string]any{"version": version, "reason": reason}
			if force {
				body["force"] = true
			}
			h := http.Header{}
			if etag := hdr.Get("ETag"); etag != "" {
				h.Set("If-Match", etag)
			}
			if _, err := c.call(cmd.Context(), http.MethodPut, "/api/v1/channels/"+url.PathEscape(name)+"/pin", nil, h, body, &after, "promote"); err != nil {
				return err
			}
			if f.output == "json" {
				return writeJSON(e.stdout, after)
			}
			fmt.Fprintf(e.stdout, "%s: %s -> %s (pinned)\n", name, orDash(deref(before.Version)), orDash(deref(after.Version)))
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history; required)")
	cmd.Flags().BoolVar(&force, "force", false, "pin even if the version is not eligible for the channel's stream and filters")
	return cmd
}

func newUnpinCmd(e *env) *cobra.Command {
	var f clientFlags
	var reason string
	cmd := &cobra.Command{
		Use:   "unpin CHANNEL --reason R",
		Short: "Let a channel follow its stream again; needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			var after channelObject
			q := url.Values{}
			if reason != "" {
				q.Set("reason", reason)
			}
			if _, err := c.call(cmd.Context(), http.MethodDelete, "/api/v1/channels/"+url.PathEscape(args[0])+"/pin", q, nil, map[string]string{"reason": reason}, &after, "promote"); err != nil {
				return err
			}
			if f.output == "json" {
				return writeJSON(e.stdout, after)
			}
			fmt.Fprintf(e.stdout, "%s: following its stream, now %s\n", args[0], orDash(deref(after.Version)))
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history)")
	return cmd
}

func newBlockCmd(e *env) *cobra.Command   { return blockCmd(e, true) }
func newUnblockCmd(e *env) *cobra.Command { return blockCmd(e, false) }

func blockCmd(e *env, block bool) *cobra.Command {
	var f clientFlags
	var reason string
	use, short, method := "block", "Block a version: no channel serves it, no resolve answer offers it", http.MethodPut
	if !block {
		use, short, method = "unblock", "Unblock a version", http.MethodDelete
	}
	cmd := &cobra.Command{
		Use:   use + " SOURCE VERSION --reason R",
		Short: short + "; needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			if block && strings.TrimSpace(reason) == "" {
				return fmt.Errorf("block needs --reason: it goes in the audit history")
			}
			path := "/api/v1/sources/" + url.PathEscape(args[0]) + "/versions/" + url.PathEscape(args[1]) + "/block"
			var out json.RawMessage
			if _, err := c.call(cmd.Context(), method, path, nil, nil, map[string]string{"reason": reason}, &out, "promote"); err != nil {
				return err
			}
			if f.output == "json" {
				_, err := fmt.Fprintf(e.stdout, "%s\n", out)
				return err
			}
			fmt.Fprintf(e.stdout, "%s %s: %sed\n", args[0], args[1], use)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history)")
	return cmd
}

type auditEvent struct {
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}

func newHistoryCmd(e *env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "history CHANNEL",
		Short: "Show a channel's audit history, newest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(e)
			if err != nil {
				return err
			}
			var events []auditEvent
			if _, err := c.call(cmd.Context(), http.MethodGet, "/api/v1/channels/"+url.PathEscape(args[0])+"/history", nil, nil, nil, &events, ""); err != nil {
				return err
			}
			if f.output == "json" {
				return writeJSON(e.stdout, events)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AT\tACTOR\tACTION\tFROM\tTO\tREASON")
			for _, ev := range events {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ev.At.UTC().Format(time.RFC3339), ev.Actor, ev.Action, orDash(ev.From), orDash(ev.To), orDash(ev.Reason))
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	return cmd
}
