package main

import (
	"errors"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/store"
)

func newMigrateCmd(e *env) *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations and exit",
		Long: "Apply the embedded database migrations and exit. Safe to run while other\n" +
			"replicas start: migrations run under a Postgres advisory lock.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// TODO(config): fall back to database_url from --config once the
			// config loader lands; the flag and DATABASE_URL win over it.
			if databaseURL == "" {
				databaseURL = e.getenv("DATABASE_URL")
			}
			if databaseURL == "" {
				return errors.New("migrate: no database: pass --database-url or set DATABASE_URL")
			}
			log := slog.New(slog.NewTextHandler(e.stderr, nil))
			st, err := store.Open(cmd.Context(), databaseURL, log)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.Migrate(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "Postgres URL (default $DATABASE_URL)")
	return cmd
}
