package main

import (
	"log/slog"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/server/connlimit"
	"github.com/tidemark-dev/tidemark/server/registryview"
	"github.com/tidemark-dev/tidemark/server/signin"
	"github.com/tidemark-dev/tidemark/store"
)

// Wiring: how serve turns the configuration into its parts' options.
// serve.go starts them; this file says what each is given.

// serverOptions are the HTTP server's options: one store behind every
// interface the server asks for, and the indexer's hooks (nil on a
// --no-index replica). leading reports whether this replica holds the
// indexer lock.
func serverOptions(cfg *config.Config, log *slog.Logger, st *store.Store, reg *prometheus.Registry, snaps *live.Snapshots,
	scan server.ScanFunc, gate server.GateFunc, push server.PushFunc, dl *notify.Deliverer, counts *rollouts.Counts) server.Options {
	return server.Options{
		ExternalURL:     cfg.ExternalURL,
		Log:             log,
		AccessLog:       cfg.AccessLog,
		ReadTimeout:     cfg.ReadTimeout,
		DBTimeout:       cfg.DatabaseTimeout,
		Metrics:         reg,
		Store:           st,
		Scan:            scan,
		Gate:            gate,
		Push:            push,
		GitHubSecret:    secretFunc(cfg.Webhooks.GitHubSecretFile),
		DockerHubSecret: secretFunc(cfg.Webhooks.DockerHubSecretFile),
		Notifications:   dl.Status,
		Snapshots:       snaps,
		Fleet: fleet.Options{Store: st, Retention: cfg.Fleet.Retention, ActiveWindow: cfg.Fleet.ActiveWindow,
			NewClustersPerMinute: cfg.Fleet.NewClustersPerMinute, MaxClusters: cfg.Fleet.MaxClusters},
		TrustedProxies: cfg.TrustedProxies,
		Connections:    connlimit.Options{Max: cfg.Limits.MaxConnections, PerAddress: cfg.Limits.MaxConnectionsPerAddress},
		IdleTimeout:    cfg.Limits.IdleTimeout,
		ClusterAPI:     cfg.ClusterAPISources(),
		RegistryView:   registryView(cfg),
		Governance:     st,
		SignIn:         signIn(cfg, log, st),
		Rollouts:       server.RolloutOptions{Store: st, Counts: counts},
	}
}

// rolloutLoops are the rollout loops of this replica: the indexing
// leader records the rollouts indexing starts (leading reports whether
// this replica is it), and every replica counts its rollouts' clusters
// into counts, which the server's channel objects show.
func rolloutLoops(cfg *config.Config, log *slog.Logger, st *store.Store, snaps *live.Snapshots, counts *rollouts.Counts, leading func() bool) *rollouts.Loops {
	loops := rollouts.New(rollouts.Options{Store: st, Snapshot: snaps.Current, Notify: snaps.Notify, Leading: leading,
		DBTimeout: cfg.DatabaseTimeout, Counts: counts, Log: log})
	snaps.Subscribe(loops.Swapped)
	return loops
}

// reconfigure re-reads the configuration file on SIGHUP and applies its
// channels: a channel removed from the file stops being served at once (its
// pins and audit history stay in the database). Sources are the indexer's
// schedules, credentials and parsers; changing them takes a restart, and the
// log says so rather than half-applying them. A file with problems changes
// nothing.
func reconfigure(running *config.Config, log *slog.Logger, getenv func(string) string) ([]catalog.Channel, error) {
	next, err := config.Load(running.File, getenv)
	if err != nil {
		log.Error("configuration reload failed; keeping the running configuration", "err", err)
		return nil, err
	}
	for _, w := range next.Warnings {
		log.Warn(w)
	}
	if !next.SameSources(running) {
		log.Warn("sources changed in the configuration; restart tidemark to apply them (channels were applied)", "config", next.File)
	}
	if keys := next.RestartChanges(running); len(keys) > 0 {
		log.Warn("settings changed in the configuration that only a restart applies; restart tidemark to apply them (channels were applied)",
			"config", next.File, "settings", strings.Join(keys, ","))
	}
	log.Info("configuration reloaded", "config", next.File, "channels", len(next.Channels))
	return next.Channels, nil
}

// registryView is the registry view's configuration: the file's
// registry_view and how each source reaches its registry.
func registryView(cfg *config.Config) registryview.Options {
	rv := registryview.Options{Auth: cfg.RegistryView.Auth, Blobs: cfg.RegistryView.Blobs, Passthrough: cfg.RegistryView.Passthrough,
		Keychain: authn.DefaultKeychain}
	for _, s := range cfg.IndexerSources() {
		rv.Sources = append(rv.Sources, registryview.Source{Name: s.Name, Image: s.Image, Insecure: s.Insecure, Username: s.Username, Password: s.Password})
	}
	return rv
}

// signIn is the OpenID Connect sign-in of cfg's oidc:, or nil.
func signIn(cfg *config.Config, log *slog.Logger, st *store.Store) *signin.SignIn {
	o := cfg.OIDC
	if o == nil {
		return nil
	}
	var roles []signin.Role
	for _, r := range o.Roles {
		roles = append(roles, signin.Role{Group: r.Group, Scope: r.Scope, Channels: r.Channels})
	}
	return signin.New(signin.Config{Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret,
		GroupsClaim: o.GroupsClaim, Roles: roles, ExternalURL: cfg.ExternalURL, Log: log, Sessions: st})
}
