package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/openapi"
)

// The write commands send TIDEMARK_TOKEN. The API records a missing reason
// as "no reason given"; the CLI insists on one for promote and block, the
// two writes that change what clients get for a reason someone must later
// read, and leaves it optional for unpin and unblock, which undo them.

func newPromoteCmd(e *Env) *cobra.Command {
	var f clientFlags
	var reason string
	var force, rollback, override bool
	cmd := &cobra.Command{
		Use:   "promote CHANNEL VERSION --reason R [--force] [--rollback] [--override-freeze]",
		Short: "Pin a channel to a version (a promotion or a rollback); needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(2),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return fmt.Errorf("promote needs --reason: it goes in the channel's audit history")
			}
			name, version := args[0], args[1]
			// Read first so the write is conditional on what we saw: a
			// concurrent change makes the server answer 412, not overwrite it.
			var before openapi.Channel
			_, hdr, err := c.get(cmd.Context(), "/api/v1/channels/"+url.PathEscape(name), nil, &before)
			if err != nil {
				return err
			}
			h := http.Header{}
			if etag := hdr.Get("ETag"); etag != "" {
				h.Set("If-Match", etag)
			}
			body := openapi.PinRequest{Version: version, Reason: reason, Force: force, Rollback: rollback, OverrideFreeze: override}
			raw, afterHdr, err := c.do(cmd.Context(), http.MethodPut, "/api/v1/channels/"+url.PathEscape(name)+"/pin", nil, h, body, nil, "promote")
			if err != nil {
				return err
			}
			return f.printChannelWrite(e, raw, func(after openapi.Channel) error {
				return printPin(e, name, before, after, rollback, hdr.Get("ETag"), afterHdr.Get("ETag"))
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history; required)")
	cmd.Flags().BoolVar(&force, "force", false, "pin even if the version is not eligible for the channel's stream and filters")
	cmd.Flags().BoolVar(&rollback, "rollback", false, "send clusters running a newer version down to this one (without it, a pin never moves a cluster down)")
	cmd.Flags().BoolVar(&override, "override-freeze", false, "pin a frozen channel, or one outside its windows, now (scope admin; approvals still apply)")
	return cmd
}

func newUnpinCmd(e *Env) *cobra.Command {
	var f clientFlags
	var reason string
	var override bool
	cmd := &cobra.Command{
		Use:   "unpin CHANNEL [--reason R] [--override-freeze]",
		Short: "Let a channel follow its stream again; needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var q url.Values
			if override {
				q = url.Values{"override_freeze": {"true"}}
			}
			raw, _, err := c.do(cmd.Context(), http.MethodDelete, "/api/v1/channels/"+url.PathEscape(args[0])+"/pin", q, nil, reasonBody(reason), nil, "promote")
			if err != nil {
				return err
			}
			return f.printChannelWrite(e, raw, func(after openapi.Channel) error {
				_, err := fmt.Fprintf(e.Stdout, "%s: following its stream, now %s%s\n", args[0], OrDash(deref(after.Version)), heldNote(after))
				return err
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded in the audit history; optional)")
	cmd.Flags().BoolVar(&override, "override-freeze", false, "unpin a frozen channel, or one outside its windows, now (scope admin; approvals still apply)")
	return cmd
}

func reasonBody(reason string) any {
	if reason == "" {
		return nil
	}
	return openapi.ReasonRequest{Reason: reason}
}

func newBlockCmd(e *Env) *cobra.Command   { return blockCmd(e, true) }
func newUnblockCmd(e *Env) *cobra.Command { return blockCmd(e, false) }

func blockCmd(e *Env, block bool) *cobra.Command {
	var f clientFlags
	var reason string
	use, short, method := "block SOURCE VERSION --reason R", "Block a version: no channel serves it, no resolve answer offers it", http.MethodPut
	reasonHelp := "why (recorded in the audit history; required)"
	if !block {
		use, short, method = "unblock SOURCE VERSION [--reason R]", "Unblock a version", http.MethodDelete
		reasonHelp = "why (recorded in the audit history; optional)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short + "; needs TIDEMARK_TOKEN with scope promote",
		Args:  cobra.ExactArgs(2),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			if block && strings.TrimSpace(reason) == "" {
				return fmt.Errorf("block needs --reason: it goes in the audit history")
			}
			path := "/api/v1/sources/" + url.PathEscape(args[0]) + "/versions/" + url.PathEscape(args[1])
			// Read first to say when the write changes nothing.
			var before openapi.Version
			if _, _, err := c.get(cmd.Context(), path, nil, &before); err != nil {
				return err
			}
			var after openapi.Version
			raw, _, err := c.do(cmd.Context(), method, path+"/block", nil, nil, reasonBody(reason), &after, "promote")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				state := "unblocked"
				if after.Blocked {
					state = "blocked"
				}
				if before.Blocked == after.Blocked {
					state = "already " + state
				}
				_, err := fmt.Fprintf(e.Stdout, "%s %s: %s\n", args[0], after.Version, state)
				return err
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", reasonHelp)
	return cmd
}

func newScanCmd(e *Env) *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "scan SOURCE",
		Short: "Index a source now; needs TIDEMARK_TOKEN with scope scan or promote",
		Args:  cobra.ExactArgs(1),
		RunE: f.run(e, func(cmd *cobra.Command, c *apiClient, args []string) error {
			var s openapi.ScanStarted
			raw, _, err := c.do(cmd.Context(), http.MethodPost, "/api/v1/sources/"+url.PathEscape(args[0])+"/scan", nil, nil, nil, &s, "scan")
			if err != nil {
				return err
			}
			return f.output.print(e.Stdout, raw, func() error {
				msg := "scan started"
				if s.Status == "running" {
					msg = "a scan is already running"
				}
				_, err := fmt.Fprintf(e.Stdout, "%s: %s; see tidemark sources %s\n", s.Source, msg, s.Source)
				return err
			})
		}),
	}
	f.register(cmd)
	return cmd
}
