package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"github.com/tidemark-dev/tidemark/internal/cli"
)

func newDemoCmd(e *cli.Env) *cobra.Command {
	var listen, logFormat string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Serve realistic juju and k3s channels offline, from an in-process registry",
		Long: `demo starts an in-process OCI registry on loopback, pushes realistic
jujud-operator and k3s-upgrade tag histories into it, and serves them with the
same channels as deploy/examples/tidemark.yaml (v1.33 also rolls out in stages)
and canary and promoted, for the worked example in docs/promotion.md.
It needs DATABASE_URL (make demo
starts a throwaway Postgres) and no network.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := configFlags{logFormat: logFormat}
			ctx := cmd.Context()
			// Said here, not by serve: serve would name the demo's
			// configuration, a temporary file gone once demo ends.
			if e.Getenv("DATABASE_URL") == "" {
				return fmt.Errorf("no database: demo needs DATABASE_URL (make demo starts a throwaway Postgres, or run scripts/with-pg bin/tidemark demo)")
			}
			// The port first: a taken one is said before the registry is
			// seeded and Postgres migrated.
			addr := cmp.Or(e.Getenv("TIDEMARK_LISTEN"), listen)
			ln, err := listenFirst(addr)
			if err != nil {
				return err
			}
			ln.Close()
			reg, err := startDemoRegistry(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.Stderr, "demo: registry at %s, pushing tags...\n", reg)
			n, err := seedDemoRegistry(ctx, reg)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.Stderr, "demo: pushed %d tags\n", n)
			dir, err := os.MkdirTemp("", "tidemark-demo")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			recv, err := startDemoReceiver(ctx, e.Stderr)
			if err != nil {
				return err
			}
			f.path = filepath.Join(dir, "tidemark.yaml")
			if err := os.WriteFile(f.path, []byte(demoConfig(reg, listen, recv)), 0o600); err != nil {
				return err
			}
			cfg, logger, err := f.load(e)
			if err != nil {
				return err
			}
			h := hints{w: e.Stderr, demo: true, now: time.Now}
			return serve(ctx, cfg, logger, true, e.Getenv, func(a net.Addr) { h.print(a, cfg.DatabaseURL) })
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve on (TIDEMARK_LISTEN overrides it); 0.0.0.0:8080 for every interface")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	return cmd
}

// startDemoRegistry serves go-containerregistry's in-memory registry on a
// loopback port until ctx ends and returns its host:port.
func startDemoRegistry(ctx context.Context) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo registry: %w", err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return ln.Addr().String(), nil
}

// demoTags are shaped like the real repositories' histories: juju's
// released, rc and beta agents with a development build, and k3s-upgrade's
// release revisions, release candidates and arch-suffixed tags.
func demoTags() map[string][]string {
	var juju []string
	for p := 0; p <= 46; p += 3 {
		juju = append(juju, fmt.Sprintf("2.9.%d", p))
	}
	juju = append(juju, "3.0-beta1", "3.0-beta2", "3.0-rc1", "3.0-rc2", "3.0.0", "3.0.3",
		"3.1.0", "3.1.6", "3.1.8", "3.4.0", "3.4.6", "3.5.0", "3.5.5",
		"3.6-beta1", "3.6-rc1", "3.6.0", "3.6.1", "3.6.1.1", "3.6.2", "3.6.4",
		"4.0-beta1", "4.0-beta2", "4.0-rc1", "latest")
	var k3s []string
	for _, m := range []struct{ minor, last int }{{30, 14}, {31, 12}, {32, 9}, {33, 6}} {
		for p := 0; p < m.last; p += 2 {
			k3s = append(k3s, fmt.Sprintf("v1.%d.%d-k3s1", m.minor, p))
		}
		k3s = append(k3s, fmt.Sprintf("v1.%d.%d-k3s1", m.minor, m.last), fmt.Sprintf("v1.%d.%d-k3s1-amd64", m.minor, m.last))
	}
	k3s = append(k3s, "v1.33.6-k3s2", "v1.34.0-rc1-k3s1", "v1.34.0-rc2-k3s1", "v1.34.0-k3s1", "v1.34.1-k3s1", "latest")
	return map[string][]string{"jujusolutions/jujud-operator": juju, "rancher/k3s-upgrade": k3s}
}

// seedDemoRegistry pushes one small random image per tag, so that every
// version has a digest of its own.
func seedDemoRegistry(ctx context.Context, host string) (int, error) {
	n := 0
	for repo, tags := range demoTags() {
		for _, tag := range tags {
			ref, err := name.NewTag(host+"/"+repo+":"+tag, name.Insecure)
			if err != nil {
				return n, err
			}
			img, err := random.Image(256, 1)
			if err != nil {
				return n, err
			}
			if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
				return n, fmt.Errorf("demo: pushing %s: %w", ref, err)
			}
			n++
		}
	}
	return n, nil
}

// startDemoReceiver serves a notification endpoint on loopback that prints
// each CloudEvent it receives, so that a pin or a new version shows what a
// receiver gets (docs/webhooks.md). It returns its URL.
func startDemoReceiver(ctx context.Context, w io.Writer) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo notification receiver: %w", err)
	}
	var mu sync.Mutex
	srv := &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			var ev struct {
				Type string `json:"type"`
				Data struct {
					Channel, Source, From, To, Actor, Reason string
				} `json:"data"`
			}
			if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&ev); err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			what := "channel " + ev.Data.Channel
			if ev.Data.Channel == "" {
				what = "source " + ev.Data.Source
			}
			mu.Lock()
			fmt.Fprintf(w, "demo: notification %s: %s: %s -> %s (by %s)\n", ev.Type, what,
				cli.OrDash(ev.Data.From), cli.OrDash(ev.Data.To), cli.OrDash(ev.Data.Actor))
			mu.Unlock()
			rw.WriteHeader(http.StatusNoContent)
		}),
	}
	go func() { _ = srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = srv.Close() }()
	return "http://" + ln.Addr().String() + "/", nil
}

func demoConfig(host, listen, receiver string) string {
	return fmt.Sprintf(`listen: %q
sources:
  - name: jujud-operator
    image: %s/jujusolutions/jujud-operator
    scheme: juju
    interval: 1m
    exclude: '^(latest|.*\.sig)$'
    insecure: true
  - name: k3s-upgrade
    image: %s/rancher/k3s-upgrade
    scheme: semver
    build: 'k3s(\d+)'
    interval: 1m
    exclude: '^latest$'
    insecure: true
channels:
  - {name: released, source: jujud-operator, stream: released}
  - {name: proposed, source: jujud-operator, stream: proposed}
  - {name: devel, source: jujud-operator, stream: devel}
  - {name: "2.9", source: jujud-operator, constraint: "~2.9"}
  - {name: "3.6", source: jujud-operator, constraint: "~3.6"}
  - {name: stable, source: k3s-upgrade, latest: v1.33.6+k3s1, redirect: "https://github.com/k3s-io/k3s/releases/tag/"}
  - {name: latest, source: k3s-upgrade, latestRegexp: '.*', excludeRegexp: '^[^+]+-'}
  - {name: testing, source: k3s-upgrade, stream: testing, latestRegexp: '-(alpha|beta|rc)'}
  - {name: v1.31, source: k3s-upgrade, latestRegexp: 'v1\.31\..*', excludeRegexp: '^[^+]+-'}
  - {name: v1.32, source: k3s-upgrade, latestRegexp: 'v1\.32\..*', excludeRegexp: '^[^+]+-'}
  - {name: v1.33, source: k3s-upgrade, latestRegexp: 'v1\.33\..*', excludeRegexp: '^[^+]+-', rollout: {steps: [1, 10, 50, 100], interval: 1h}}
  - {name: v1.34, source: k3s-upgrade, latestRegexp: 'v1\.34\..*', excludeRegexp: '^[^+]+-'}
  - {name: stepwise, source: k3s-upgrade, latestRegexp: '.*', excludeRegexp: '^[^+]+-', stepwise: true, settle: 1m}
  # docs/promotion.md's worked example: release to canary by a pin and
  # promoted follows once canary's clusters run it for 20 s.
  - {name: canary, source: k3s-upgrade, latest: v1.33.4+k3s1}
  - {name: promoted, source: k3s-upgrade, latestRegexp: 'v1\.33\.4\+.*', promote: {from: canary, soak: 20s, min_adopted: 3, max_stuck_ratio: 0.34}}
fleet: {active_window: 10m, stuck_after: 1m}
notify:
  - {name: demo-log, url: %q}
`, listen, host, host, receiver)
}
