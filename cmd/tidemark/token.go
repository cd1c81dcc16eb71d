package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/tokendb"
)

func newTokenCmd(e *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke API tokens",
		Long: "Manage the bearer tokens the write API accepts. They live in the database\n" +
			"that serve uses: --config FILE or TIDEMARK_CONFIG, or DATABASE_URL alone.\n" +
			"Scopes: promote (pin, unpin, block, unblock, rollout controls, scan), scan,\n" +
			"read (the fleet and notifications), admin (everything).",
	}
	cmd.AddCommand(newTokenCreateCmd(e), newTokenListCmd(e), newTokenRevokeCmd(e))
	return cli.CommandGroup(cmd)
}

func newTokenCreateCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var name string
	var scopes, channels []string
	cmd := &cobra.Command{
		Use:   "create --name NAME --scope promote|scan|read|admin [--channels a,b]",
		Short: "Create a token and print it, once, alone on stdout",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(name) == "" {
				return errors.New("token create needs --name: it is the actor in the audit history")
			}
			list := splitScopes(scopes)
			if len(list) == 0 {
				return fmt.Errorf("token create needs --scope (%s)", strings.Join(tokendb.Scopes, ", "))
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				tok, err := st.CreateChannelToken(cmd.Context(), name, list, splitList(channels))
				if err != nil {
					return fmt.Errorf("token create: %w", err)
				}
				// Only the token goes to stdout so that $(tidemark token create ...)
				// captures it; the database keeps only its hash.
				if _, err := fmt.Fprintln(e.Stdout, tok); err != nil {
					return err
				}
				limit := ""
				if cs := splitList(channels); len(cs) > 0 {
					limit = " for channels " + strings.Join(cs, ",")
				}
				fmt.Fprintf(e.Stderr, "token %q created with scope %s%s; it is shown this once, store it now\n", name, strings.Join(list, ","), limit)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringVar(&name, "name", "", "token name, recorded as the actor of its writes (required)")
	cmd.Flags().StringSliceVar(&scopes, "scope", nil, "promote, scan, read or admin; repeat or comma-separate (required)")
	cmd.Flags().StringSliceVar(&channels, "channels", nil, "limit channel writes (pin, unpin, rollout controls) to these channels, names or globs (v1.*); such a token makes no source-wide write (block, scan)")
	return cmd
}

// tokenJSON is a token as token list -o json|yaml prints it.
type tokenJSON struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Channels  []string   `json:"channels"`
	CreatedAt time.Time  `json:"created_at"`
	LastUsed  *time.Time `json:"last_used"`
	RevokedAt *time.Time `json:"revoked_at"`
}

func newTokenListCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var out cli.OutputFlag
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tokens (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Check(); err != nil {
				return err
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				tokens, err := st.ListTokens(cmd.Context())
				if err != nil {
					return fmt.Errorf("token list: %w", err)
				}
				list := make([]tokenJSON, 0, len(tokens))
				for _, t := range tokens {
					list = append(list, tokenJSON{Name: t.Name, Scopes: t.Scopes, Channels: t.Channels, CreatedAt: t.CreatedAt.UTC(),
						LastUsed: openapi.TimeOrNil(t.LastUsed), RevokedAt: openapi.TimeOrNil(t.RevokedAt)})
				}
				return out.PrintValue(e.Stdout, list, func() error {
					tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tSCOPES\tCHANNELS\tCREATED\tLAST USED\tREVOKED")
					for _, t := range tokens {
						chans := "(all)"
						if len(t.Channels) > 0 {
							chans = strings.Join(t.Channels, ",")
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, strings.Join(t.Scopes, ","), chans,
							cli.Stamp(t.CreatedAt), cli.Stamp(t.LastUsed), cli.Stamp(t.RevokedAt))
					}
					return tw.Flush()
				})
			})
		},
	}
	cf.registerPath(cmd)
	out.Register(cmd)
	return cmd
}

func newTokenRevokeCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var name string
	cmd := &cobra.Command{
		Use:   "revoke (--name NAME | NAME)",
		Short: "Revoke a token; its name stays taken and its history stays",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if name != "" && name != args[0] {
					return fmt.Errorf("token revoke: --name %q and %q: give one name", name, args[0])
				}
				name = args[0]
			}
			if name == "" {
				return errors.New("token revoke needs a name: tidemark token revoke --name NAME")
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				// The store keeps the first revocation time; read it first so
				// a second revoke says it changed nothing.
				tokens, err := st.ListTokens(cmd.Context())
				if err != nil {
					return fmt.Errorf("token revoke: %w", err)
				}
				if err := st.RevokeToken(cmd.Context(), name); err != nil {
					return fmt.Errorf("token revoke: %w", err)
				}
				for _, t := range tokens {
					if t.Name == name && !t.RevokedAt.IsZero() {
						fmt.Fprintf(e.Stderr, "token %q was already revoked at %s\n", name, cli.Stamp(t.RevokedAt))
						return nil
					}
				}
				fmt.Fprintf(e.Stderr, "token %q revoked\n", name)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringVar(&name, "name", "", "the token's name")
	return cmd
}

// withStore opens the database serve would use and runs fn on it. A
// configuration file is not required: an operator with only DATABASE_URL
// (a Kubernetes Job, a shell on the database host) can manage tokens too.
func withStore(ctx context.Context, e *cli.Env, cf *configFlags, fn func(*store.Store) error) error {
	url, err := configDatabaseURL(e, cf)
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, url, slog.New(slog.NewTextHandler(e.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.CheckMigrated(ctx); err != nil {
		return err
	}
	return fn(st)
}

// registerPath is --config alone: the token commands log nothing worth a
// --log-format.
func (f *configFlags) registerPath(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.path, "config", "", "configuration file naming the database (default $TIDEMARK_CONFIG, else $DATABASE_URL)")
}

func configDatabaseURL(e *cli.Env, cf *configFlags) (string, error) {
	path := cf.path
	if path == "" {
		path = e.Getenv("TIDEMARK_CONFIG")
	}
	if path == "" {
		if u := e.Getenv("DATABASE_URL"); u != "" {
			return u, nil
		}
		return "", errors.New("no database: pass --config FILE, or set TIDEMARK_CONFIG or DATABASE_URL")
	}
	cfg, err := config.Load(path, e.Getenv) // DATABASE_URL, when set, wins inside
	if err != nil {
		return "", err
	}
	if cfg.DatabaseURL == "" {
		return "", fmt.Errorf("no database: set database_url in %s or DATABASE_URL", cfg.File)
	}
	return cfg.DatabaseURL, nil
}

// splitScopes accepts --scope promote --scope scan and --scope promote,scan
// alike, trimmed and without duplicates.
func splitScopes(in []string) []string {
	var out []string
	for _, s := range in {
		for part := range strings.SplitSeq(s, ",") {
			part = strings.ToLower(strings.TrimSpace(part))
			if part != "" && !slices.Contains(out, part) {
				out = append(out, part)
			}
		}
	}
	return out
}

// splitList is splitScopes without lowercasing: channel names as written.
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		for part := range strings.SplitSeq(s, ",") {
			if part = strings.TrimSpace(part); part != "" && !slices.Contains(out, part) {
				out = append(out, part)
			}
		}
	}
	return out
}
