// Package core is the shared core of Tidemark's HTTP surface: the Server
// every audience's handlers hang off (options, the current view, metrics,
// the access log), the error table, authentication and scopes, body
// decoding, the JSON shapes every audience sends, and the reads the API and
// the console share. The audiences are packages of their own: the release
// protocol in server, the JSON API in server/api, the console in
// server/console, Cluster API in server/capi, the registry view in
// server/registryview; server.New puts them together.
//
// Every read is answered from an immutable snapshot.Snapshot (the View),
// so channel and resolve requests never touch Postgres and keep answering
// while the database is gone. Handlers bind, call the snapshot and encode;
// they hold no version logic.
package core

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/clientaddr"
	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/enroll"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/connlimit"
	"github.com/tidemark-dev/tidemark/server/core/authfail"
	"github.com/tidemark-dev/tidemark/server/registryview"
	"github.com/tidemark-dev/tidemark/server/signin"
	"github.com/tidemark-dev/tidemark/server/tufview"
	"github.com/tidemark-dev/tidemark/server/webhooks"
)

// Options configures a Server.
type Options struct {
	// ExternalURL prefixes absolute links and default redirects. "" derives
	// them from each request (scheme from X-Forwarded-Proto or TLS, Host).
	ExternalURL string
	Log         *slog.Logger
	// AccessLog is which requests get an access log line: AccessLogSample
	// ("" too), AccessLogAll or AccessLogOff (accesslog.go).
	AccessLog string
	// Metrics is where the server registers its collectors; /metrics serves
	// this registry, so cmd can share one with the indexer. nil: a private one.
	Metrics *prometheus.Registry
	// Snapshots keeps the snapshot the server answers from current
	// (internal/live). nil: the server makes one from Data, Sources,
	// Channels and Load, the same fields as live.Options.
	Snapshots *live.Snapshots
	Data      live.Data
	Sources   []catalog.Source
	Channels  []catalog.Channel
	Load      func(ctx context.Context) (*snapshot.Snapshot, error)
	// ShutdownTimeout bounds how long Serve drains in-flight requests after
	// its context ends. 0: 15s.
	ShutdownTimeout time.Duration
	// Store serves the writes, tokens and history. nil: those routes
	// answer 503 and reads still work.
	Store Store
	// Scan starts a scan for POST .../scan. nil when this replica does not
	// index: the route answers 503.
	Scan ScanFunc
	// Gate checks one tag's release gates now (a pin of a version whose
	// gates are pending). nil when this replica does not index: the pin
	// answers 422 naming the pending gates.
	Gate GateFunc
	// Push queues the tags registry webhooks name (webhooks.go). nil when
	// this replica does not index: the webhook routes answer 503.
	Push PushFunc
	// GitHubSecret and DockerHubSecret read the secrets of those webhooks;
	// nil: that webhook is not configured (404).
	GitHubSecret, DockerHubSecret webhooks.SecretFunc
	// Notifications lists outbound events for GET /api/v1/notifications;
	// nil: that route answers 503.
	Notifications NotificationsFunc
	// AuthFailWindow is how long a failed authentication counts against
	// its address (AuthFailLimit of them lock it). 0: a minute.
	AuthFailWindow time.Duration
	// WriteRate and WriteBurst limit writes per token (per second, bucket
	// size). 0: 5/s, burst 10.
	WriteRate  float64
	WriteBurst int
	// ReadTimeout bounds reading a whole request, headers and body, so a
	// client trickling its bytes cannot hold a connection. 0: 30s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of its answer. 0: 60s, above DBTimeout plus a write's reload.
	WriteTimeout time.Duration
	// DBTimeout is the deadline of a request's database work (writes,
	// tokens, history): a database that accepts connections but never
	// answers costs a request this much and a 503. 0: 5s.
	DBTimeout time.Duration
	// Fleet records the clusters that ask channel URLs (internal/fleet,
	// flushed under service.Run) and serves the fleet routes (fleetapi.go).
	Fleet fleet.Options
	// Version is the build's; ConfigDigest the running configuration's
	// (GET /api/v1/status), nil: none.
	Version      string
	ConfigDigest func() string
	// Signing: this replica's part in signing (the TUF loop); nil: none.
	Signing SigningStatus
	// Enrollment is the enrolled clusters' keys (fleet.enrollment,
	// internal/enroll); nil: enrollment is off. Enroller enrolls and
	// revokes for the API; nil: those routes answer 503.
	Enrollment *enroll.Keys
	Enroller   Enroller
	// Rollouts keeps and advances staged rollouts (rollouts.go).
	Rollouts RolloutOptions
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (internal/clientaddr); none: the connection's peer is the client.
	TrustedProxies []netip.Prefix
	// TUF reads the signed answers Tidemark publishes (server/tufview);
	// nil: /tuf/ answers 404 saying they are not configured.
	TUF tufview.Store
	// TUFRevision is a channel's published revision (internal/tufpub's
	// loop); nil: channel objects carry no tuf.
	TUFRevision func(channel string) (int64, bool)
	// Connections bound the listener's connections, in all and per peer
	// address (server/connlimit; trusted proxies are exempt per address).
	// Zero: the defaults.
	Connections connlimit.Options
	// IdleTimeout closes a keep-alive connection idle this long. 0: 60s.
	IdleTimeout time.Duration
	// ClusterAPI are the sources that answer Cluster API's
	// GenerateUpgradePlan hook (server/capi), each as the handler named
	// after it.
	ClusterAPI []string
	// RegistryView serves channels and sources as OCI repositories under
	// /v2/ (server/registryview); Snapshot, Authenticate and Observe are
	// the server's. Its zero value serves with auth none and streamed
	// blobs, reaching no source (every repository is unknown).
	RegistryView registryview.Options
	// Governance serves scheduled changes, approvals and freezes, and runs
	// the governor (internal/governor) on this replica, as on every other.
	// nil: those routes answer 503.
	Governance Governance
	// SignIn signs people in with OpenID Connect (server/signin): the
	// console's flow, session cookies and ID tokens as bearer tokens.
	// nil: tokens only.
	SignIn *signin.SignIn
}

// Defaults of the HTTP hygiene contract.
const (
	defaultWriteTimeout = 60 * time.Second
	MaxHeaderWait       = 10 * time.Second
)

// Server answers HTTP requests from the current snapshot.
type Server struct {
	Opts    Options
	Log     *slog.Logger
	Metrics *metrics
	access  *accessLog
	snaps   *live.Snapshots
	Cur     atomic.Pointer[View] // the current snapshot, ready to serve
	limits  *limiters
	// authFails counts failed authentications per client address.
	authFails *authfail.Table
	FleetRec  *fleet.Recorder
	// GovernKick wakes the governor after a freeze changes.
	GovernKick chan struct{}
}

// New builds a server with no snapshot yet: /readyz answers 503 and data
// routes 503 until the first successful Reload.
func New(opts Options) (*Server, error) {
	if opts.Load == nil && opts.Data == nil && opts.Snapshots == nil {
		return nil, fmt.Errorf("%w: server options: Snapshots, Data or Load is required", resolver.ErrInvalid)
	}
	opts.ExternalURL = strings.TrimRight(opts.ExternalURL, "/")
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = prometheus.NewRegistry()
	}
	access, err := newAccessLog(opts.AccessLog)
	if err != nil {
		return nil, fmt.Errorf("%w: server options: %w", resolver.ErrInvalid, err)
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 15 * time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = config.DefaultReadTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = defaultWriteTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = config.DefaultIdleTimeout
	}
	if opts.DBTimeout <= 0 {
		opts.DBTimeout = config.DefaultDatabaseTimeout
	}
	s := &Server{Opts: opts, Log: opts.Log, access: access, limits: newLimiters(opts.WriteRate, opts.WriteBurst),
		authFails: authfail.New(AuthFailLimit, cmp.Or(opts.AuthFailWindow, authfail.Window)), GovernKick: make(chan struct{}, 1)}
	if s.snaps = opts.Snapshots; s.snaps == nil {
		if s.snaps, err = live.New(live.Options{Data: opts.Data, Sources: opts.Sources, Channels: opts.Channels, Load: opts.Load, Log: opts.Log}); err != nil {
			return nil, fmt.Errorf("server options: %w", err)
		}
	}
	m, err := newMetrics(opts.Metrics, s.snapshotAge)
	if err != nil {
		return nil, err
	}
	s.Metrics = m
	if s.FleetRec, err = fleet.New(opts.Fleet, opts.Metrics, s.indexedOn); err != nil {
		return nil, fmt.Errorf("register fleet metrics: %w", err)
	}
	if err := opts.Metrics.Register(rollouts.NewCollector(s.snaps.Current)); err != nil {
		return nil, fmt.Errorf("register rollout metrics: %w", err)
	}
	if s.Opts.Rollouts.Counts == nil {
		s.Opts.Rollouts.Counts = &rollouts.Counts{}
	}
	s.snaps.Subscribe(s.swapped)
	s.snaps.OnFailure(func(error) { s.Metrics.reloadFailures.Inc() })
	return s, nil
}

// indexedOn says whether version is indexed by channel's source.
func (s *Server) indexedOn(channel, version string) bool {
	v := s.Cur.Load()
	if v == nil {
		return false
	}
	e := v.entry(channel)
	if e == nil {
		return false
	}
	_, err := v.Snap.Version(e.Ans.Channel.Source, version)
	return err == nil
}

// Reload loads a snapshot whole and swaps it in. On failure the previous
// snapshot keeps being served and /readyz reports degraded until a reload
// succeeds.
func (s *Server) Reload(ctx context.Context) error { return s.snaps.Reload(ctx) }

// Notify announces a change to the snapshot holder; it never blocks.
func (s *Server) Notify(c snapshot.Change) { s.snaps.Notify(c) }

// SetChannels replaces the configured channels (a configuration reload).
func (s *Server) SetChannels(chs []catalog.Channel) { s.snaps.SetChannels(chs) }

// Degrade marks the server degraded for a reason found outside a reload.
func (s *Server) Degrade(reason error) { s.snaps.Degrade(reason) }

// Snapshots is the holder the server answers from, for service.Run.
func (s *Server) Snapshots() *live.Snapshots { return s.snaps }

// Fleet is the recorder of the clusters that ask, for service.Run; nil
// when nothing is recorded (no fleet store).
func (s *Server) Fleet() *fleet.Recorder {
	if s.Opts.Fleet.Store == nil {
		return nil
	}
	return s.FleetRec
}

// Governor is what the governor needs from this server, for service.Run:
// the store, the snapshot, the reload after a change, the outcome metric
// and the kick after a freeze changes. nil when there is no governance.
func (s *Server) Governor() *governor.Options {
	if s.Opts.Governance == nil {
		return nil
	}
	return &governor.Options{Store: s.Opts.Governance, Log: s.Log, Kick: s.GovernKick,
		Snapshot: s.snaps.Current, Applied: s.snaps.Notify, Observe: s.Metrics.Governance}
}

// Update rebuilds the snapshot for cs before a write answers.
func (s *Server) Update(ctx context.Context, cs snapshot.Changes) error {
	return s.snaps.Update(ctx, cs)
}

// swapped installs next (live.Swap): everything the hot path needs per
// channel is computed here once instead of per request.
func (s *Server) swapped(prev, next *snapshot.Snapshot) {
	v := newView(next, s.Cur.Load(), s.Opts.ExternalURL, s.Opts.Rollouts.Counts, s.Opts.TUFRevision)
	if s.FleetRec != nil {
		v.Graphs.Active = s.FleetRec.ActiveServed
	}
	s.Cur.Store(v)
	s.Metrics.observeSnapshot(prev, next)
}

func (s *Server) snapshotAge() float64 {
	v := s.Cur.Load()
	if v == nil {
		return 0
	}
	return time.Since(v.Snap.LoadedAt).Seconds()
}

// View returns the current View or ErrUnavailable before the first load.
func (s *Server) View() (*View, error) {
	v := s.Cur.Load()
	if v == nil {
		return nil, fmt.Errorf("%w: no snapshot loaded yet", resolver.ErrUnavailable)
	}
	return v, nil
}

// Get registers a read for GET and HEAD: monitors and `curl -I` ask with
// HEAD, and net/http drops the body of a HEAD answer, so the status and
// headers are exactly GET's.
func (s *Server) Get(e *echo.Echo, path string, h echo.HandlerFunc, m ...echo.MiddlewareFunc) {
	e.Match([]string{http.MethodGet, http.MethodHead}, path, h, m...)
}

// ClientAddr is the address a request comes from: the connection's peer,
// or, behind a trusted proxy, the rightmost untrusted X-Forwarded-For hop.
func (s *Server) ClientAddr(r *http.Request) string {
	return clientaddr.Of(r, s.Opts.TrustedProxies)
}
