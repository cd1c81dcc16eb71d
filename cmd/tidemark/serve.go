package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/store"
)

func newServeCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var noIndex, printHints bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service: index registries, answer channel URLs and the API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, log, err := cf.load(e)
			if err != nil {
				return err
			}
			var ready func(net.Addr)
			if printHints {
				h := hints{w: e.Stderr, now: time.Now, example: isExampleConfig(cfg.File)}
				ready = func(a net.Addr) { h.print(a, cfg.DatabaseURL) }
			}
			setMemoryLimit(log, e.Getenv)
			stopProfile, err := startCPUProfile(e.Getenv("TIDEMARK_CPU_PROFILE"))
			if err != nil {
				return err
			}
			defer stopProfile()
			return serve(cmd.Context(), cfg, log, !noIndex, e.Getenv, ready)
		},
	}
	cf.register(cmd)
	cmd.Flags().BoolVar(&noIndex, "no-index", false, "serve only; never index (another replica or process indexes)")
	cmd.Flags().BoolVar(&printHints, "hints", false, "once serving, print the URL and a token command for a person (make run sets it)")
	return cmd
}

// startupTimeout bounds serve's start-up calls to the database; a variable
// so that a test need not wait 30 s.
var startupTimeout = 30 * time.Second

// serve wires store, indexer and server together and runs until ctx ends; ready, when set, is called once it
// listens.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, index bool, getenv func(string) string, ready func(net.Addr)) error {
	if cfg.DatabaseURL == "" {
		return fmt.Errorf("no database: set database_url in %s or DATABASE_URL", cfg.File)
	}
	if cfg.OIDC != nil {
		if err := cfg.OIDC.CheckSecret(); err != nil {
			return err
		}
	}
	ln, err := listenFirst(cfg.Listen)
	if err != nil {
		return err
	}
	defer ln.Close()
	// Start-up (connect, migrate, sync, first load) has one deadline, so a
	// database that accepts connections and never answers fails it with one
	// line instead of hanging with no output.
	startCtx, started := context.WithTimeout(ctx, startupTimeout)
	defer started()
	st, err := store.Open(startCtx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer st.Close()
	startErr := func(err error) error {
		if startCtx.Err() != nil && ctx.Err() == nil {
			return st.NoAnswer(startupTimeout)
		}
		return err
	}
	if err := st.Migrate(startCtx); err != nil {
		return startErr(err)
	}
	sources := cfg.ResolverSources()
	if err := st.SyncSources(startCtx, sources); err != nil {
		return startErr(err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(st.Collectors()...)

	var ix *indexer.Indexer
	var scan server.ScanFunc
	if index {
		// A scan asked over HTTP belongs to the service, not to the request
		// that asked: it runs under serve's ctx.
		scan = func(_ context.Context, source string) (bool, error) {
			running := ix.Status(source).Running
			return running, ix.Trigger(ctx, source)
		}
	}
	var push server.PushFunc
	var gate server.GateFunc
	if index {
		push = pushFunc(ctx, &ix)
		gate = func(gctx context.Context, source, tag string) error { return ix.GateTag(gctx, source, tag) }
	}
	dl, err := newDeliverer(startCtx, cfg, st, log, reg, func() bool { return ix != nil && ix.Leading() })
	if err != nil {
		return startErr(err)
	}
	snaps, err := live.New(live.Options{Data: st, Sources: sources, Channels: cfg.Channels, Log: log})
	if err != nil {
		return err
	}
	counts := &rollouts.Counts{}
	var srv *server.Server
	signing, err := signedAnswers(cfg, st, snaps, log, func() *fleet.Recorder { return srv.Fleet() })
	if err != nil {
		return err
	}
	opts := serverOptions(cfg, log, st, reg, snaps, scan, gate, push, dl, counts)
	if signing != nil {
		opts.TUF, opts.TUFRevision = st, signing.Revision
	}
	if srv, err = server.New(opts); err != nil {
		return err
	}
	if rec := srv.Fleet(); signing != nil && rec != nil {
		// The fleet's part of a served set changes without a snapshot.
		rec.OnServedChange(func() { signing.Changed(nil, nil) })
	}
	snaps.Subscribe(dl.SnapshotChanged)
	dl.SetLineClusters(srv.LineClusters)
	// The indexing leader records the rollouts indexing starts; ix is set
	// below, before the loops start asking.
	loops := rolloutLoops(cfg, log, st, snaps, counts, func() bool { return ix != nil && ix.Leading() })
	// Start-up needs Postgres (the first snapshot comes from it), never the
	// registry: indexing starts after the server answers.
	if err := snaps.Reload(startCtx); err != nil {
		return startErr(err)
	}
	started()

	ix, err = indexer.New(indexer.Options{
		Sources: cfg.IndexerSources(),
		Store:   st,
		Lock: func(ctx context.Context) (<-chan struct{}, func(), bool, error) {
			l, held, err := st.TryIndexerLock(ctx)
			return l.Lost(), l.Release, held, err
		},
		Log:        log,
		Metrics:    reg,
		RateLimits: cfg.RateLimits(),
		Keychain:   authn.DefaultKeychain, // as docker pull would
		OnChange:   func(source string) { snaps.Notify(snapshot.Change{Source: source}) },
		MaxPending: cfg.Webhooks.MaxPending,
	})
	if err != nil {
		return err
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	log.Info("tidemark serving", "listen", ln.Addr().String(), "config", cfg.File,
		"sources", len(cfg.Sources), "channels", len(cfg.Channels), "index", index)
	if ready != nil {
		ready(ln.Addr())
	}

	ro := service.Options{
		Log: log, HTTP: srv, Listener: ln, Snapshots: snaps,
		Fleet: srv.Fleet(), Rollouts: loops, Governor: srv.Governor(),
		// Changes made through other replicas (pins, blocks, their scans)
		// arrive as notifications. The first comes once it listens, so a
		// change made since the Reload above is picked up rather than lost.
		Changes:   st.ListenChanges,
		Ping:      st.Ping,
		PingEvery: dbCheckEvery,
		Hangup:    hup,
		Reconfigure: func() ([]catalog.Channel, error) {
			next, err := reconfigure(cfg, log, getenv)
			if err != nil {
				return nil, err
			}
			reloadOnlineKey(next, signing, log)
			snaps.SetLifecycle(next.Lifecycles())
			return next.Channels, nil
		},
	}
	ro.Background = append(ro.Background, dl.Run)
	promo, err := promotionLoop(cfg, log, st, snaps, srv, reg, func() bool { return ix != nil && ix.Leading() })
	if err != nil {
		return err
	}
	ro.Background = append(ro.Background, promo.Run)
	if signing != nil {
		ro.Background = append(ro.Background, signing.Run)
	}
	if index {
		ro.Background = append(ro.Background, func(ctx context.Context) {
			if err := ix.Run(ctx); err != nil {
				log.Error("indexer stopped", "err", err)
			}
		})
	}
	// ix.Run returns only after every scan in flight, and Run waits for it,
	// so the deferred st.Close never runs under one.
	err = service.Run(ctx, ro)
	log.Info("tidemark stopped")
	return err
}

// dbCheckEvery is how often serve checks that the database still answers.
const dbCheckEvery = 5 * time.Second
