package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/store"
)

// The parts serve starts, each made from the configuration: serve.go says
// in what order, this file how each is made.

// startupTimeout bounds serve's start-up calls to the database; a variable
// so that a test need not wait 30 s.
var startupTimeout = 30 * time.Second

// dbCheckEvery is how often serve checks that the database still answers.
const dbCheckEvery = 5 * time.Second

// serveable says what serve lacks before it starts: a database, and an
// OIDC client secret long enough to seal sessions.
func serveable(cfg *config.Config) error {
	if cfg.DatabaseURL == "" {
		return fmt.Errorf("no database: set database_url in %s or DATABASE_URL", cfg.File)
	}
	if cfg.OIDC != nil {
		return cfg.OIDC.CheckSecret()
	}
	return nil
}

// metricsRegistry is the replica's /metrics: the Go runtime, the process
// and the store's pool, beside what each part registers.
func metricsRegistry(st *store.Store) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(st.Collectors()...)
	return reg
}

// indexerHooks are what the server asks of the indexer (a scan asked over
// HTTP, a pushed tag, a gate checked now); all nil on a --no-index
// replica. *ix is set once the indexer exists, after the server. The work
// belongs to the service, not to the request that asked: it runs under
// serve's ctx.
func indexerHooks(ctx context.Context, index bool, ix **indexer.Indexer) (server.ScanFunc, server.PushFunc, server.GateFunc) {
	if !index {
		return nil, nil, nil
	}
	scan := func(_ context.Context, source string) (bool, error) {
		running := (*ix).Status(source).Running
		return running, (*ix).Trigger(ctx, source)
	}
	gate := func(gctx context.Context, source, tag string) error { return (*ix).GateTag(gctx, source, tag) }
	return scan, pushFunc(ctx, ix), gate
}

// newIndexer is the registry side: it indexes only while it holds the
// indexer lock, and every change it records reloads the snapshot.
func newIndexer(cfg *config.Config, st *store.Store, log *slog.Logger, reg prometheus.Registerer, snaps *live.Snapshots) (*indexer.Indexer, error) {
	return indexer.New(indexer.Options{
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
}

// serviceOptions are the running service's: the listener, reloads (a
// change another replica made arrives as a notification, the first once
// it listens, so a change made since start-up's reload is picked up
// rather than lost), the database watch, and SIGHUP re-reading the
// configuration's channels (and the TUF online key).
func serviceOptions(cfg *config.Config, log *slog.Logger, st *store.Store, srv *server.Server, snaps *live.Snapshots,
	hup chan os.Signal, reconf func() (*config.Config, error)) service.Options {
	return service.Options{
		Log: log, HTTP: srv, Snapshots: snaps, Fleet: srv.Fleet(), Governor: srv.Governor(),
		Changes: st.ListenChanges, Ping: st.Ping, PingEvery: dbCheckEvery, Hangup: hup,
		Reconfigure: func() ([]catalog.Channel, error) {
			next, err := reconf()
			if err != nil {
				return nil, err
			}
			return next.Channels, nil
		},
	}
}
