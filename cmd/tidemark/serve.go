package main

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/cli"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/loop"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/store"
)

func newServeCmd(e *cli.Env) *cobra.Command {
	var cf configFlags
	var noIndex, printHints, checkPort bool
	var listen string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the service: index registries, answer channel URLs and the API",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if checkPort {
				return portFree(cf, e, listen)
			}
			cfg, log, err := cf.load(e)
			if err != nil {
				return err
			}
			cfg.Listen = cmp.Or(listen, cfg.Listen)
			var ready func(net.Addr)
			if printHints {
				h := hints{w: e.Stderr, now: time.Now, example: isExampleConfig(cfg.File)}
				ready = func(a net.Addr) { h.print(a, cfg.DatabaseURL) }
			}
			setMemoryLimit(log, e.Getenv)
			stopProfile, err := startProfiles(e.Getenv)
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
	cmd.Flags().StringVar(&listen, "listen", "", "address to serve on, e.g. 127.0.0.1:8081 (default: the configuration's listen, or $TIDEMARK_LISTEN)")
	cmd.Flags().BoolVar(&checkPort, "check-port", false, "only check that the address is free, then exit (make run, before Postgres starts)")
	cmd.Flags().MarkHidden("check-port")
	return cmd
}

// serve wires store, indexer and server together and runs until ctx ends; ready, when set, is called once it
// listens.
func serve(ctx context.Context, cfg *config.Config, log *slog.Logger, index bool, getenv func(string) string, ready func(net.Addr)) error {
	if err := serveable(cfg); err != nil {
		return err
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

	reg := metricsRegistry(st)
	lm, err := loop.NewMetrics(reg)
	if err != nil {
		return err
	}
	var ix *indexer.Indexer
	leading := func() bool { return ix != nil && ix.Leading() }
	scan, push, gate := indexerHooks(ctx, index, &ix)
	dl, err := newDeliverer(startCtx, cfg, st, log, reg, leading)
	if err != nil {
		return startErr(err)
	}
	snaps, err := live.New(live.Options{Data: st, Sources: sources, Channels: cfg.Channels, Log: log})
	if err != nil {
		return err
	}
	counts := &rollouts.Counts{}
	var srv *server.Server
	signing, err := signedAnswers(cfg, st, snaps, log, reg, func() *fleet.Recorder { return srv.Fleet() })
	if err != nil {
		return err
	}
	opts := serverOptions(cfg, log, st, reg, snaps, scan, gate, push, dl, counts)
	if opts.Enrollment, err = enrollment(startCtx, cfg, st, log); err != nil {
		return startErr(err)
	}
	if signing != nil {
		opts.TUF, opts.TUFRevision, opts.Signing = st, signing.Revision, signing
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
	loops := rolloutLoops(cfg, log, st, snaps, counts, leading, lm)
	// Start-up needs Postgres (the first snapshot comes from it), never the
	// registry: indexing starts after the server answers.
	if err := snaps.Reload(startCtx); err != nil {
		return startErr(err)
	}
	started()
	if ix, err = newIndexer(cfg, st, log, reg, snaps); err != nil {
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

	ro := serviceOptions(cfg, log, st, srv, snaps, hup, func() (*config.Config, error) {
		next, err := reconfigure(cfg, log, getenv)
		if err == nil {
			reloadOnlineKey(next, signing, log)
			snaps.SetLifecycle(next.Lifecycles())
		}
		return next, err
	})
	ro.Listener, ro.Rollouts = ln, loops
	if ro.Governor != nil {
		ro.Governor.Loops = lm
	}
	if opts.Enrollment != nil {
		ro.Background = append(ro.Background, opts.Enrollment.Run)
	}
	promo, err := promotionLoop(cfg, log, st, snaps, srv, reg, leading, lm)
	if err != nil {
		return err
	}
	ro.Background = append(ro.Background, dl.Run, promo.Run)
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
