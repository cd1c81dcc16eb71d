package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/store"
)

func newMigrateCmd(e *cli.Env) *cobra.Command {
	var databaseURL string
	var cf configFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations and exit",
		Long: "Apply the embedded database migrations and exit. Safe to run while other\n" +
			"replicas start: migrations run under a Postgres advisory lock.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// --database-url, else the database serve would use: the config's
			// database_url (DATABASE_URL wins inside), else DATABASE_URL alone.
			if databaseURL == "" {
				u, err := configDatabaseURL(e, &cf)
				if err != nil {
					return fmt.Errorf("migrate: %w (or pass --database-url)", err)
				}
				databaseURL = u
			}
			log := slog.New(slog.NewTextHandler(e.Stderr, nil))
			st, err := store.Open(cmd.Context(), databaseURL, log)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.Migrate(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "Postgres URL (default: the config's database_url, else $DATABASE_URL)")
	cf.registerPath(cmd)
	return cmd
}
