package main

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/api"
	"github.com/tidemark-dev/tidemark/store"
)

func newClusterCmd(e *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Enroll clusters and revoke their keys (fleet.enrollment)",
		Long: "With fleet.enrollment set, only clusters whose channel requests carry their\n" +
			"key count as evidence (and, when required, only they may name a cluster).\n" +
			"The keys live in the database that serve uses: --config FILE or\n" +
			"TIDEMARK_CONFIG, or DATABASE_URL alone; a new or revoked key reaches every\n" +
			"replica within a second.",
	}
	cmd.AddCommand(newClusterEnrollCmd(e), newClusterRevokeCmd(e))
	return cli.CommandGroup(cmd)
}

func newClusterEnrollCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var channels []string
	cmd := &cobra.Command{
		Use:   "enroll ID [--channels C,...]",
		Short: "Enroll a cluster: print its key once, then a channel URL carrying it per channel",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, chans := args[0], splitList(channels)
			cfg, err := clusterConfig(e, &cf)
			if err != nil {
				return err
			}
			if cfg != nil {
				for _, ch := range chans {
					if !slices.ContainsFunc(cfg.Channels, func(c catalog.Channel) bool { return c.Name == ch }) {
						return fmt.Errorf("cluster enroll: no channel %q in %s", ch, cfg.File)
					}
				}
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				key, err := st.Enroll(cmd.Context(), id, chans)
				if err != nil {
					return fmt.Errorf("cluster enroll: %w", err)
				}
				// The key alone on the first line, so that
				// $(tidemark cluster enroll ID | head -1) captures it; the
				// database keeps only its hash.
				fmt.Fprintln(e.Stdout, key)
				for _, u := range api.EnrolledURLs(enrolledBase(cfg), key, chans) {
					fmt.Fprintln(e.Stdout, u)
				}
				fmt.Fprintf(e.Stderr, "cluster %q enrolled; its key is shown this once, store it now (tidemark cluster revoke %s ends it)\n", id, id)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringSliceVar(&channels, "channels", nil, "channels to print a URL carrying the key for")
	return cmd
}

func newClusterRevokeCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a cluster's key on every replica",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				if err := st.RevokeEnrollment(cmd.Context(), args[0]); err != nil {
					return fmt.Errorf("cluster revoke: %w", err)
				}
				fmt.Fprintf(e.Stderr, "cluster %q revoked\n", args[0])
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	return cmd
}

// clusterConfig is the configuration file, for its channels and external
// URL; nil with DATABASE_URL alone.
func clusterConfig(e *cli.Env, cf *configFlags) (*config.Config, error) {
	path := cf.path
	if path == "" {
		path = e.Getenv("TIDEMARK_CONFIG")
	}
	if path == "" {
		if e.Getenv("DATABASE_URL") == "" {
			return nil, errors.New("no database: pass --config FILE, or set TIDEMARK_CONFIG or DATABASE_URL")
		}
		return nil, nil
	}
	return config.Load(path, e.Getenv)
}

// enrolledBase is where a cluster reaches Tidemark: external_url, else
// the address serve listens on.
func enrolledBase(cfg *config.Config) string {
	if cfg == nil {
		return "http://localhost" + config.DefaultListen
	}
	if cfg.ExternalURL != "" {
		return strings.TrimRight(cfg.ExternalURL, "/")
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return "http://" + cfg.Listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
