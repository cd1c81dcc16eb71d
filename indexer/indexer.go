// Package indexer turns registry repositories into versions: it lists every
// tag of each source with go-containerregistry, classifies them, writes each
// scan through the store in one transaction, then resolves the digests of new
// tags. Scans run once at start and then on a gocron schedule per source, only
// on the replica that holds the store's indexer lock.
package indexer

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Source is one source as the indexer needs it. cmd/ builds it from the
// configuration.
type Source struct {
	catalog.Source                // Name, Image, Parser, Labels
	Interval       time.Duration  // between scheduled scans; <= 0: only at start and on demand
	Exclude        *regexp.Regexp // tags never stored; nil: none
	Insecure       bool           // plain-http registry
	Concurrency    int            // digest requests in flight; <= 0: 8
	Timeout        time.Duration  // per registry request; <= 0: 30s
	// Recheck is how often a scheduled scan also re-reads the digests of
	// tags it already knows, to notice re-tags (a tag pointed at another
	// image). Other scans never re-read a known digest. The time of the last
	// re-check is kept in the store, so restarts and a change of leader do
	// not put it off. 0: 24h; < 0: never.
	Recheck  time.Duration
	Username string
	// Password is read at every scan so that a rotated password file is
	// picked up. nil: no basic auth; Options.Keychain, then anonymous.
	Password func() (string, error)
	// SignatureKey is Gates.SignatureKeyFile parsed (the configuration
	// reads it to validate it); nil with a signature gate: New reads it.
	SignatureKey *gates.Key
}

// Store is what the indexer needs of *store.Store.
type Store interface {
	SyncSources(ctx context.Context, sources []catalog.Source) error
	ApplyScan(ctx context.Context, r resolver.ScanResult) (catalog.Scan, error)
	TagsWithoutDigest(ctx context.Context, source string) ([]string, error)
	SetDigests(ctx context.Context, source string, digests map[string]string) error
	AddScanRequests(ctx context.Context, scanID int64, n int) error
	FailScan(ctx context.Context, scanID int64, cause error) error
	RecheckedAt(ctx context.Context, source string) (time.Time, error)
	SetRecheckedAt(ctx context.Context, source string, at time.Time) error
	GateTargets(ctx context.Context, source string, names []string) ([]resolver.Tag, error)
	SetGateChecks(ctx context.Context, source string, checks map[string]resolver.GateChecks) (changed bool, err error)
}

// Options configure an Indexer.
type Options struct {
	Sources []Source
	Store   Store
	// Lock is the indexer lock Run leads under (*store.Store's
	// TryIndexerLock, wired by cmd/tidemark). Run needs it; scans asked
	// for (ScanNow, Trigger) do not.
	Lock    TryLock
	Log     *slog.Logger          // nil: discard
	Metrics prometheus.Registerer // nil: metrics are kept but not exposed
	// RateLimits caps requests per second per registry host, shared by every
	// source on that host. Docker Hub without an entry gets
	// DefaultDockerHubRate; other hosts are unlimited unless listed. Keys are
	// spelled like image hosts ("docker.io", "ghcr.io", "127.0.0.1:5000").
	RateLimits map[string]float64
	// Keychain finds credentials for sources without a Password. nil:
	// authn.DefaultKeychain, which reads Docker's config.json (found through
	// DOCKER_CONFIG or HOME) and runs its credential helpers.
	Keychain authn.Keychain
	// OnChange is called after a scan or a digest batch changed what a
	// client could be answered.
	OnChange func(source string)
	// Transport is the base transport (tests); nil: remote.DefaultTransport.
	Transport http.RoundTripper
	// PushStore indexes tags named by webhooks (push.go); nil: Store, if
	// it is one (as *store.Store is), else pushed tags fail.
	PushStore PushStore
	// MaxPending bounds each source's queue of pushed tags; Push refuses
	// more with ErrPushQueueFull. 0: DefaultMaxPending.
	MaxPending int
}

// DefaultMaxPending is webhooks.max_pending's default (CONTRACT section 12).
const DefaultMaxPending = 1000

// DefaultDockerHubRate is the indexer's one fallback request rate for Docker
// Hub, used when RateLimits has no entry for it: well under its anonymous
// pull limits' burst. (cmd/tidemark always passes an entry: the
// configuration's docker.io rate, whose default has the same value.)
const DefaultDockerHubRate = 10

// Progress is what a source's current or last scan has done so far.
type Progress struct {
	Running    bool
	Phase      string // "listing", "digests", "" when idle
	Started    time.Time
	Pages      int // tag list pages read
	Tags       int // tags listed so far
	DigestsDue int // digests to resolve in this scan
	Digests    int // digests resolved so far
	Requests   int // registry requests so far
	LastError  string
}

// Indexer indexes sources. Safe for concurrent use.
type Indexer struct {
	sources       map[string]*source
	order         []*source
	store         Store
	tryLock       TryLock
	log           *slog.Logger
	metrics       *metrics
	onChng        func(string)
	keychain      authn.Keychain
	retry         registryhttp.RetryPolicy
	lockRetry     time.Duration // how often a standby replica tries the lock
	progressEvery time.Duration
	pageSize      int                     // tags asked per page
	pageLimits    registryhttp.PageLimits // what one page may hold
	leading       atomic.Bool             // holds the indexer lock and runs the schedule
	scans         scanGroup               // scans in flight, whoever started them
	push          PushStore
	maxPending    int // per source's push queue
	pushMetrics   *pushMetrics
	listings      *listingGate
	digestSlots   chan struct{} // a token per digest phase under way (maxDigestPhases)
	pings         *pingCache    // registries' answers to the authentication ping
}

// scanGroup counts scans in flight so that Run can wait for them before it
// returns (and its caller closes the store). Unlike a sync.WaitGroup it lets
// a scan start while Run already waits: Trigger answers requests at any time.
type scanGroup struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while nobody waits
}

func (g *scanGroup) add() {
	g.mu.Lock()
	g.n++
	g.mu.Unlock()
}

func (g *scanGroup) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

func (g *scanGroup) wait() {
	g.mu.Lock()
	if g.n == 0 {
		g.mu.Unlock()
		return
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	<-idle
}

type source struct {
	Source
	repo     name.Repository
	registry string        // host as requests go to it, the metric label
	limiter  *rate.Limiter // shared per registry; nil: unlimited
	// pushSlots is shared per registry: at most pushWorkers pushed tags
	// of all its sources are confirmed at once.
	pushSlots chan struct{}
	base      http.RoundTripper
	gates     gates.Config // the registry gates, parsed

	mu       sync.Mutex
	running  *scanRun // nil when idle
	progress Progress
	push     pushQueue
}

type scanRun struct {
	done chan struct{}
	err  error
}

// New checks the sources and prepares metrics and shared rate limiters.
func New(opts Options) (*Indexer, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: indexer needs a store", resolver.ErrInvalid)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	pm, err := newPushMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	base := opts.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	keychain := opts.Keychain
	if keychain == nil {
		keychain = authn.DefaultKeychain
	}
	limits := map[string]float64{}
	for host, rps := range opts.RateLimits {
		key, err := registryKey(host)
		if err != nil {
			return nil, fmt.Errorf("%w: rate limit for registry %q: %w", resolver.ErrInvalid, host, err)
		}
		limits[key] = rps
	}
	if _, ok := limits[name.DefaultRegistry]; !ok {
		limits[name.DefaultRegistry] = DefaultDockerHubRate
	}
	limiters := map[string]*rate.Limiter{}
	pushSlots := map[string]chan struct{}{}
	ix := &Indexer{
		sources:       map[string]*source{},
		store:         opts.Store,
		tryLock:       opts.Lock,
		log:           log,
		metrics:       m,
		onChng:        opts.OnChange,
		keychain:      keychain,
		retry:         registryhttp.DefaultRetry,
		lockRetry:     15 * time.Second,
		progressEvery: 5 * time.Second,
		pageSize:      pageSize,
		pageLimits:    registryhttp.PageLimits{Bytes: registryhttp.MaxPageBytes, Tags: registryhttp.MaxPageTags},
		push:          pushStoreOf(opts),
		maxPending:    cmp.Or(max(opts.MaxPending, 0), DefaultMaxPending),
		pushMetrics:   pm,
		listings:      newListingGate(maxListings),
		digestSlots:   make(chan struct{}, maxDigestPhases),
		pings:         newPingCache(),
	}
	for _, s := range opts.Sources {
		if _, dup := ix.sources[s.Name]; dup {
			return nil, fmt.Errorf("%w: source %q listed twice", resolver.ErrInvalid, s.Name)
		}
		if s.Parser == nil {
			return nil, fmt.Errorf("%w: source %q has no parser", resolver.ErrInvalid, s.Name)
		}
		var nopts []name.Option
		if s.Insecure {
			nopts = append(nopts, name.Insecure)
		}
		repo, err := name.NewRepository(s.Image, nopts...)
		if err != nil {
			return nil, fmt.Errorf("%w: source %q: image %q: %w", resolver.ErrInvalid, s.Name, s.Image, err)
		}
		host, _ := registryKey(repo.RegistryStr())
		lim, ok := limiters[host]
		if !ok {
			if rps, set := limits[host]; set && rps > 0 {
				// No burst: requests are spaced 1/rps apart, so no second
				// ever sees more than rps+1 of them. A burst of a second's
				// worth let the first second of a scan send twice the rate
				// (148 requests in one second at 100/s, bench-far).
				lim = rate.NewLimiter(rate.Limit(rps), 1)
			}
			limiters[host] = lim
		}
		if s.Recheck == 0 {
			s.Recheck = 24 * time.Hour
		}
		gcfg, err := gateConfig(&s)
		if err != nil {
			return nil, fmt.Errorf("%w: source %q: %w", resolver.ErrInvalid, s.Name, err)
		}
		slots, ok := pushSlots[host]
		if !ok {
			slots = make(chan struct{}, pushWorkers)
			pushSlots[host] = slots
		}
		src := &source{Source: s, repo: repo, registry: host, limiter: lim, pushSlots: slots, base: base, gates: gcfg}
		ix.sources[s.Name] = src
		ix.order = append(ix.order, src)
	}
	return ix, nil
}

// Leading reports whether this replica holds the indexer lock and runs the
// schedule.
func (ix *Indexer) Leading() bool { return ix.leading.Load() }

// ScanNow scans source and returns the scan's error. If a scan of source is
// already running (scheduled or requested), ScanNow does not start another:
// it waits for that one and returns its result. ErrNotFound for an unknown
// source. It scans whether or not this replica holds the indexer lock: an
// operator's request is answered where it lands, and the store's one
// transaction per scan keeps a rare overlap with the leader consistent.
func (ix *Indexer) ScanNow(ctx context.Context, source string) error {
	src, ok := ix.sources[source]
	if !ok {
		return fmt.Errorf("%w: source %q", resolver.ErrNotFound, source)
	}
	return ix.scanOrJoin(ctx, src, false)
}

// RecheckDigests scans source and re-reads the digest of every present tag,
// recording re-tags. It joins a scan already running (which may not recheck).
func (ix *Indexer) RecheckDigests(ctx context.Context, source string) error {
	src, ok := ix.sources[source]
	if !ok {
		return fmt.Errorf("%w: source %q", resolver.ErrNotFound, source)
	}
	return ix.scanOrJoin(ctx, src, true)
}

// Trigger starts a scan of source in the background (or lets the running one
// stand for it) and returns at once: what POST .../scan needs to answer 202.
// A requested scan re-reads every present tag's digest, as RecheckDigests
// does: a person asking for a scan after a re-tag (an image index that
// gained a platform) must see it, and its gates re-checked, now rather than
// at the daily recheck (issue 25). The scan stops when ctx ends.
// ErrNotFound for an unknown source.
func (ix *Indexer) Trigger(ctx context.Context, source string) error {
	src, ok := ix.sources[source]
	if !ok {
		return fmt.Errorf("%w: source %q", resolver.ErrNotFound, source)
	}
	ix.scans.add() // before the goroutine, so that Run cannot miss it
	go func() {
		defer ix.scans.done()
		_ = ix.scanOrJoin(ctx, src, true)
	}()
	return nil
}

// Status reports the running or last scan of source; the zero Progress for
// an unknown or never scanned source.
func (ix *Indexer) Status(source string) Progress {
	src, ok := ix.sources[source]
	if !ok {
		return Progress{}
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.progress
}

// scanOrJoin runs a scan in the calling goroutine, or waits for the one
// already running so that a source is never scanned twice at once.
func (ix *Indexer) scanOrJoin(ctx context.Context, src *source, recheck bool) error {
	ix.scans.add()
	defer ix.scans.done()
	src.mu.Lock()
	if run := src.running; run != nil {
		src.mu.Unlock()
		select {
		case <-run.done:
			return run.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	run := &scanRun{done: make(chan struct{})}
	src.running = run
	src.progress = Progress{Running: true, Phase: "listing", Started: time.Now()}
	src.mu.Unlock()

	run.err = ix.scan(ctx, src, recheck)

	src.mu.Lock()
	src.running = nil
	src.progress.Running = false
	src.progress.Phase = ""
	if run.err != nil && ctx.Err() == nil { // an interrupted scan says nothing about the source
		src.progress.LastError = run.err.Error()
	}
	src.mu.Unlock()
	close(run.done)
	return run.err
}

// registryKey names a registry for rate limits: Docker Hub's several
// spellings are one registry.
func registryKey(host string) (string, error) {
	if host == "registry-1.docker.io" {
		return name.DefaultRegistry, nil
	}
	reg, err := name.NewRegistry(host)
	if err != nil {
		return "", err
	}
	return reg.RegistryStr(), nil
}
