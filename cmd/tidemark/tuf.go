package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
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
	cmd.AddCommand(newTUFInitCmd(e), newTUFRotateRootCmd(e), newTUFRotateOnlineCmd(e), newTUFDiscardPendingCmd(e), cli.NewTUFVerifyCmd(e))
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

// keyOrNew loads path, or creates it when it does not exist.
func keyOrNew(path string) (ed25519.PrivateKey, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return tufpub.NewKeyFile(path)
	}
	return tufpub.LoadKeyFile(path)
}

func newTUFRotateRootCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var rootKey, newRootKey string
	cmd := &cobra.Command{
		Use:   "rotate-root --root-key OLD --new-root-key NEW",
		Short: "Sign the next root, keyed by NEW, with OLD and NEW (NEW is created when absent; NEW = OLD renews the root's expiry)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rootKey == "" || newRootKey == "" {
				return errors.New("tuf rotate-root needs --root-key OLD and --new-root-key NEW")
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				old, cur, err := tufpub.StartRotation(cmd.Context(), st, rootKey)
				if err != nil {
					return fmt.Errorf("tuf rotate-root: %w", err)
				}
				next, err := keyOrNew(newRootKey)
				if err != nil {
					return fmt.Errorf("tuf rotate-root: --new-root-key: %w", err)
				}
				root, err := tufpub.NextRoot(cur, old, next, nil, tufpub.DefaultExpires, time.Now())
				if err != nil {
					return fmt.Errorf("tuf rotate-root: %w", err)
				}
				if err := st.AddTUFRoot(cmd.Context(), root, false); err != nil {
					return fmt.Errorf("tuf rotate-root: %w", err)
				}
				fmt.Fprintf(e.Stderr, "tuf rotate-root: root version %d stored and served (expires %s); its root key is %s\n",
					root.Version, root.Expires.Format(time.RFC3339), newRootKey)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringVar(&rootKey, "root-key", "", "the current root key")
	cmd.Flags().StringVar(&newRootKey, "new-root-key", "", "the next root key (created when the file does not exist)")
	return cmd
}

func newTUFRotateOnlineCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var rootKey, onlineKey string
	cmd := &cobra.Command{
		Use:   "rotate-online --root-key FILE --online-key NEW",
		Short: "Create NEW and sign the next root naming it, pending until serve runs with online_key_file: NEW",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rootKey == "" || onlineKey == "" {
				return errors.New("tuf rotate-online needs --root-key FILE and --online-key NEW")
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				rk, cur, err := tufpub.StartRotation(cmd.Context(), st, rootKey)
				if err != nil {
					return fmt.Errorf("tuf rotate-online: %w", err)
				}
				ok, err := tufpub.NewKeyFile(onlineKey)
				if err != nil {
					return fmt.Errorf("tuf rotate-online: --online-key: %w", err)
				}
				root, err := tufpub.NextRoot(cur, rk, nil, ok.Public().(ed25519.PublicKey), tufpub.DefaultExpires, time.Now())
				if err != nil {
					return fmt.Errorf("tuf rotate-online: %w", err)
				}
				if err := st.AddTUFRoot(cmd.Context(), root, true); err != nil {
					return fmt.Errorf("tuf rotate-online: %w", err)
				}
				fmt.Fprintf(e.Stderr, "tuf rotate-online: root version %d stored, pending: run serve with tuf: {online_key_file: %s} (restart serve or SIGHUP) to publish it, or drop it with tidemark tuf discard-pending --root-key %s\n",
					root.Version, onlineKey, rootKey)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringVar(&rootKey, "root-key", "", "the current root key")
	cmd.Flags().StringVar(&onlineKey, "online-key", "", "file to create for the new online key")
	return cmd
}

func newTUFDiscardPendingCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var rootKey string
	cmd := &cobra.Command{
		Use:   "discard-pending --root-key FILE",
		Short: "Drop the root rotate-online signed, while no replica has published it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rootKey == "" {
				return errors.New("tuf discard-pending needs --root-key FILE (the key the served root names)")
			}
			return withStore(cmd.Context(), e, &cf, func(st *store.Store) error {
				version, online, err := tufpub.DiscardPending(cmd.Context(), st, rootKey)
				if err != nil {
					return fmt.Errorf("tuf discard-pending: %w", err)
				}
				fmt.Fprintf(e.Stderr, "tuf discard-pending: root version %d dropped; serve keeps its online key, and the key the dropped root named (ID %.16s…) signs nothing: delete its file\n",
					version, online)
				return nil
			})
		},
	}
	cf.registerPath(cmd)
	cmd.Flags().StringVar(&rootKey, "root-key", "", "the root key the served root names")
	return cmd
}
