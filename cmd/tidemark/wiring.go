package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/enroll"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/loop"
	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/internal/tufpub"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
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
			StuckAfter: cfg.Fleet.StuckAfter, NewClustersPerMinute: cfg.Fleet.NewClustersPerMinute, MaxClusters: cfg.Fleet.MaxClusters,
			EvidenceNetworks: cfg.Fleet.EvidenceNetworks},
		TrustedProxies: cfg.TrustedProxies,
		Connections:    connlimit.Options{Max: cfg.Limits.MaxConnections, PerAddress: cfg.Limits.MaxConnectionsPerAddress, PerNetwork: cfg.Limits.MaxConnectionsPerNetwork},
		IdleTimeout:    cfg.Limits.IdleTimeout,
		ClusterAPI:     cfg.ClusterAPISources(),
		RegistryView:   registryView(cfg),
		Governance:     st,
		SignIn:         signIn(cfg, log, st),
		Rollouts:       server.RolloutOptions{Store: st, Counts: counts},
		Enroller:       st,
		Version:        plainVersion(),
		ConfigDigest:   runningDigest(cfg, snaps),
	}
}

// rolloutLoops are the rollout loops of this replica: the indexing
// leader records the rollouts indexing starts (leading reports whether
// this replica is it), and every replica counts its rollouts' clusters
// into counts, which the server's channel objects show.
func rolloutLoops(cfg *config.Config, log *slog.Logger, st *store.Store, snaps *live.Snapshots, counts *rollouts.Counts, leading func() bool, lm *loop.Metrics) *rollouts.Loops {
	loops := rollouts.New(rollouts.Options{Store: st, Snapshot: snaps.Current, Notify: snaps.Notify, Leading: leading,
		DBTimeout: cfg.DatabaseTimeout, Counts: counts, Log: log, Loops: lm})
	snaps.Subscribe(loops.Swapped)
	return loops
}

// reconfigure re-reads the configuration file on SIGHUP and applies its
// channels: a channel removed from the file stops being served at once (its
// pins and audit history stay in the database). Sources are the indexer's
// schedules, credentials and parsers; changing them takes a restart, and the
// log says so rather than half-applying them. A file with problems changes
// nothing.
func reconfigure(running *config.Config, log *slog.Logger, getenv func(string) string) (*config.Config, error) {
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
	return next, nil
}

// reloadOnlineKey reads next's tuf.online_key_file into the signing loop
// (SIGHUP after tidemark tuf rotate-online); a key that does not load
// leaves the running one.
func reloadOnlineKey(next *config.Config, signing *tufpub.Loop, log *slog.Logger) {
	if signing == nil || next.TUF == nil {
		return
	}
	key, err := tufpub.LoadKeyFile(next.TUF.OnlineKeyFile)
	if err != nil {
		log.Error("tuf: online_key_file did not load on SIGHUP; keeping the running key", "file", next.TUF.OnlineKeyFile, "err", err)
		return
	}
	signing.SetOnline(key)
	log.Info("tuf: online key reloaded", "file", next.TUF.OnlineKeyFile)
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

// signedAnswers is the loop that publishes signed answers when tuf: is
// configured (nil otherwise). Only serve reads the online key; its
// answers read the current snapshot and the fleet's active versions. Only
// the replica holding the signer lock publishes; every replica compares
// its configuration's digest with the last publication's.
func signedAnswers(cfg *config.Config, st *store.Store, snaps *live.Snapshots, log *slog.Logger, reg prometheus.Registerer,
	rec func() *fleet.Recorder) (*tufpub.Loop, error) {
	t := cfg.TUF
	if t == nil {
		return nil, nil
	}
	key, err := tufpub.LoadKeyFile(t.OnlineKeyFile)
	if err != nil {
		return nil, fmt.Errorf("tuf: online_key_file: %w (tidemark tuf init --root-key FILE --online-key FILE makes it)", err)
	}
	p := &tufpub.Publisher{Store: st, Online: key, Now: time.Now,
		Expires: tufpub.Expires{Root: t.Root, Targets: t.Targets, Snapshot: t.Snapshot, Timestamp: t.Timestamp}}
	digest := runningDigest(cfg, snaps)
	answers := func(now time.Time) ([]signed.Answer, int64, string) {
		snap := snaps.Current()
		if snap == nil {
			return nil, 0, ""
		}
		var active func(string) ([]string, uint64)
		if r := rec(); r != nil {
			active = r.ActiveServed
		}
		return tufpub.AnswersOf(snap, active, now), snap.StoreRevision, digestOf(cfg, snap)
	}
	lock := func(ctx context.Context) (tufpub.Held, bool, error) {
		l, held, err := st.TakeSignerLock(ctx)
		if !held {
			return nil, false, err
		}
		return l, true, nil
	}
	host, _ := os.Hostname()
	loop, err := tufpub.NewLoop(p, tufpub.LoopOptions{Answers: answers, Lock: lock, Reads: st, Digest: digest,
		Replica: host, KeyFile: t.OnlineKeyFile, Log: log, Metrics: reg})
	if err != nil {
		return nil, err
	}
	snaps.Subscribe(loop.Changed)
	return loop, nil
}

// promotionLoop moves channels with promote: on the fleet's evidence; the
// indexing leader runs it (leading), so two replicas never promote twice.
// It also computes every channel's evidence, which every replica reads.
func promotionLoop(cfg *config.Config, log *slog.Logger, st *store.Store, snaps *live.Snapshots, srv *server.Server,
	reg *prometheus.Registry, leading func() bool, lm *loop.Metrics) (*promotion.Loop, error) {
	return promotion.New(promotion.Options{Store: st, Snapshot: snaps.Current, Leading: leading, Applied: srv.Notify, Log: log,
		ActiveWindow: cfg.Fleet.ActiveWindow, StuckAfter: cfg.Fleet.StuckAfter, Metrics: reg, Loops: lm})
}

// enrollment keeps the enrolled clusters' keys in memory when
// fleet.enrollment is on (nil otherwise), read once before serving so a
// valid key is never refused at start-up; its Run keeps them current.
func enrollment(ctx context.Context, cfg *config.Config, st *store.Store, log *slog.Logger) (*enroll.Keys, error) {
	keys := enroll.New(cfg.Fleet.Enrollment, st, log)
	if keys == nil {
		return nil, nil
	}
	if err := keys.Reload(ctx); err != nil {
		return nil, fmt.Errorf("read enrolled keys: %w", err)
	}
	return keys, nil
}

// runningDigest is the digest of the running configuration: cfg's
// sources (a change takes a restart) and the channels the current
// snapshot serves (SIGHUP applies them).
// It is computed once per snapshot: replicas compare it every second.
func runningDigest(cfg *config.Config, snaps *live.Snapshots) func() string {
	type computed struct {
		snap   *snapshot.Snapshot
		digest string
	}
	var last atomic.Pointer[computed]
	return func() string {
		snap := snaps.Current()
		if snap == nil {
			return cfg.Digest()
		}
		if c := last.Load(); c != nil && c.snap == snap {
			return c.digest
		}
		c := &computed{snap: snap, digest: digestOf(cfg, snap)}
		last.Store(c)
		return c.digest
	}
}

// digestOf is the digest of cfg's sources with the channels snap serves.
func digestOf(cfg *config.Config, snap *snapshot.Snapshot) string {
	answers := snap.Channels()
	chs := make([]catalog.Channel, len(answers))
	for i, a := range answers {
		chs[i] = a.Channel
	}
	return cfg.DigestWith(chs)
}
