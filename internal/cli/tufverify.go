package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/theupdateframework/go-tuf/v2/metadata/config"
	"github.com/theupdateframework/go-tuf/v2/metadata/updater"

	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// NewTUFVerifyCmd checks a channel's signed answer from the shell the way
// a client does: go-tuf's stock updater, trusting only the root given.
func NewTUFVerifyCmd(e *Env) *cobra.Command {
	var rootFile, server, cache string
	var out OutputFlag
	cmd := &cobra.Command{
		Use:   "verify CHANNEL --root 1.root.json [--server URL] [--cache DIR]",
		Short: "Verify a channel's signed answer with a stock TUF client, trusting only the root given",
		Long: "verify fetches the server's TUF metadata and the channel's target with go-tuf's updater,\n" +
			"trusting only --root (1.root.json, fetched once out of band), and prints the answer it\n" +
			"verified. A replayed, expired or tampered answer fails. --cache keeps the metadata it\n" +
			"trusted between runs, so that a later run also refuses versions older than it saw.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Check(); err != nil {
				return err
			}
			if rootFile == "" {
				return errors.New("tuf verify needs --root FILE: the root you trust, e.g. 1.root.json saved from GET /tuf/metadata/1.root.json")
			}
			root, err := os.ReadFile(rootFile)
			if err != nil {
				return fmt.Errorf("tuf verify: --root: %w", err)
			}
			base, err := url.Parse(cmp.Or(server, e.Getenv("TIDEMARK_SERVER"), "http://localhost:8080"))
			if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
				return fmt.Errorf("tuf verify: --server %q: want an http(s) URL such as http://localhost:8080", base)
			}
			a, err := verifyChannel(base, root, cache, args[0])
			if err != nil {
				return fmt.Errorf("tuf verify %s: %w", args[0], err)
			}
			return out.PrintValue(e.Stdout, a, func() error { return printVerified(e, a) })
		},
	}
	cmd.Flags().StringVar(&rootFile, "root", "", "the trusted root (1.root.json); required")
	cmd.Flags().StringVar(&server, "server", "", "Tidemark server URL (default $TIDEMARK_SERVER, else http://localhost:8080)")
	cmd.Flags().StringVar(&cache, "cache", "", "directory that keeps the trusted metadata between runs (default: none, each run trusts only --root)")
	out.Register(cmd)
	return cmd
}

// verifyChannel runs go-tuf's updater against base's /tuf and returns the
// channel's verified target.
func verifyChannel(base *url.URL, root []byte, cache, channel string) (signed.Answer, error) {
	var a signed.Answer
	tmp, err := os.MkdirTemp("", "tidemark-tuf-verify")
	if err != nil {
		return a, err
	}
	defer os.RemoveAll(tmp)
	cfg, err := config.New(base.JoinPath("tuf", "metadata").String(), root)
	if err != nil {
		return a, err
	}
	cfg.RemoteTargetsURL = base.JoinPath("tuf", "targets").String()
	cfg.LocalMetadataDir = cmp.Or(cache, filepath.Join(tmp, "metadata"))
	cfg.LocalTargetsDir = filepath.Join(tmp, "targets")
	if err := cfg.EnsurePathsExist(); err != nil {
		return a, err
	}
	up, err := updater.New(cfg)
	if err != nil {
		return a, fmt.Errorf("the root: %w", err)
	}
	if err := up.Refresh(); err != nil {
		return a, fmt.Errorf("refreshing the metadata from %s: %w", cfg.RemoteMetadataURL, err)
	}
	target := signed.Path(channel)
	ti, err := up.GetTargetInfo(target)
	if err != nil {
		return a, fmt.Errorf("%s is not among the signed targets (is the channel's name right, and signing on?): %w", target, err)
	}
	_, raw, err := up.DownloadTarget(ti, filepath.Join(tmp, "target.json"), "")
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("%s verified but is not a channel answer: %w", target, err)
	}
	return a, nil
}

func printVerified(e *Env, a signed.Answer) error {
	answer := "nothing"
	if v := a.Answer; v != nil {
		answer = fmt.Sprintf("%s (tag %s, digest %s)", v.Version, v.Tag, OrDash(v.Digest))
	}
	served := make([]string, len(a.Served))
	for i, v := range a.Served {
		served[i] = v.Version
	}
	_, err := fmt.Fprintf(e.Stdout, "%s: verified %s, revision %d, issued %s\nanswers %s\nserved: %s\n",
		a.Channel, signed.Path(a.Channel), a.Revision, Stamp(a.Issued), answer, OrDash(strings.Join(served, ", ")))
	return err
}
