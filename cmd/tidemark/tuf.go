package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/tufpub"
	"github.com/tidemark-dev/tidemark/store"
)

func newTUFCmd(e *cli.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tuf",
		Short: "Set up signed answers (The Update Framework)",
		Long: "Signed answers publish each channel's answer and served set as TUF metadata\n" +
			"a stock client verifies (docs/tuf.md). tuf init makes the keys and the first\n" +
			"root in the database serve uses: --config FILE or TIDEMARK_CONFIG, or\n" +
			"DATABASE_URL alone. Keep the root key offline: serve never reads it.",
	}
	cmd.AddCommand(newTUFInitCmd(e))
	return cli.CommandGroup(cmd)
}

func newTUFInitCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var rootKey, onlineKey string
	cmd := &cobra.Command{
		Use:   "init --root-key FILE --online-key FILE",
		Short: "Make the root and online keys (ed25519, PKCS#8 PEM, 0600) and sign the first root",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rootKey == "" || onlineKey == "" {
				return errors.New("tuf init needs --root-key FILE and --online-key FILE (both are created; neither may exist)")
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				if _, err := st.TUFMeta(cmd.Context(), "root", 0); err == nil {
					return errors.New("tuf init: a TUF root exists already in this database; nothing was created")
				}
				rk, err := tufpub.NewKeyFile(rootKey)
				if err != nil {
					return fmt.Errorf("tuf init: root key: %w", err)
				}
				ok, err := tufpub.NewKeyFile(onlineKey)
				if err != nil {
					return fmt.Errorf("tuf init: online key: %w", err)
				}
				root, err := tufpub.Root(rk, ok, tufpub.DefaultExpires, time.Now())
				if err != nil {
					return err
				}
				if err := st.InitTUF(cmd.Context(), root); err != nil {
					return fmt.Errorf("tuf init: %w", err)
				}
				fmt.Fprintf(e.Stderr, "tuf init: root version 1 stored (expires %s); root key %s (keep it offline), online key %s (tuf: {online_key_file: ...} for serve)\n",
					root.Expires.Format(time.RFC3339), rootKey, onlineKey)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringVar(&rootKey, "root-key", "", "file to create for the root key (keep it offline)")
	cmd.Flags().StringVar(&onlineKey, "online-key", "", "file to create for the online key (serve's tuf.online_key_file)")
	return cmd
}
