// Package live keeps the service's snapshot current: it holds the
// immutable snapshot.Snapshot every surface answers from, rebuilds it when
// a change is announced (only the part the change touched), rebuilds it
// again when a soak ends, and says why when it could not (degraded).
//
// It is not an HTTP concern: the HTTP server, the leader loops and the
// notification deliverer subscribe to its swaps; internal/service runs its
// loops.
package live

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Data is where snapshots come from (*store.Store). With Options.Data set,
// a change reads only what it touched: one source's tags, or the channel
// states, rather than every tag of every source.
type Data interface {
	Load(ctx context.Context, sources []catalog.Source) ([]catalog.SourceData, map[string]catalog.ChannelState, error)
	LoadSources(ctx context.Context, sources []catalog.Source) ([]catalog.SourceData, error)
	LoadStates(ctx context.Context) (map[string]catalog.ChannelState, error)
}

// Revisions is Data that says its newest store revision (*store.Store):
// a snapshot read whole after it includes every change up to it.
type Revisions interface {
	StoreRevision(ctx context.Context) (int64, error)
}

// Options configures Snapshots.
type Options struct {
	// Data, Sources and Channels are where snapshots come from: with Data
	// set, a change rebuilds only the part it touched. Without it, Load
	// builds every snapshot whole (tests, benchmarks).
	Data     Data
	Sources  []catalog.Source
	Channels []catalog.Channel
	Load     func(ctx context.Context) (*snapshot.Snapshot, error)
	Log      *slog.Logger
	// Now is the clock snapshots are built at (their LoadedAt); nil:
	// time.Now. A test moves it rather than sleeping until a date passes.
	Now func() time.Time
}

// Swap is told of each snapshot installed, in order, under the reload
// lock: prev is nil for the first. It must not block.
type Swap func(prev, next *snapshot.Snapshot)

// Snapshots holds the current snapshot and rebuilds it.
type Snapshots struct {
	opts Options
	log  *slog.Logger
	cur  atomic.Pointer[snapshot.Snapshot]
	// degraded is why the last reload failed; nil when it did not.
	degraded atomic.Pointer[string]
	// reloadMu orders reloads: a write reloads before answering while a
	// notification may reload too, and an older load must never be swapped
	// in after a newer one.
	reloadMu sync.Mutex
	channels atomic.Pointer[[]catalog.Channel] // the configured ones (SetChannels)
	sources  atomic.Pointer[[]catalog.Source]  // the configured ones, lifecycle as reloaded (SetLifecycle)
	// pending collects Notify's changes until the reload loop takes them.
	pendingMu sync.Mutex
	pending   snapshot.Changes
	kick      chan struct{}
	subsMu    sync.Mutex
	subs      []Swap
	failed    []func(error)
	soaks     soakTimer // rebuilds the snapshot when a soak ends
}

// New makes a holder with no snapshot yet: Current is nil until the first
// successful Reload.
func New(opts Options) (*Snapshots, error) {
	if opts.Load == nil && opts.Data == nil {
		return nil, fmt.Errorf("%w: snapshot options: Data or Load is required", resolver.ErrInvalid)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Snapshots{opts: opts, log: opts.Log, kick: make(chan struct{}, 1)}
	s.channels.Store(&opts.Channels)
	s.sources.Store(&opts.Sources)
	if opts.Now == nil {
		s.opts.Now = time.Now
	}
	if opts.Data != nil && opts.Load == nil {
		s.opts.Load = s.loadAll
	}
	return s, nil
}

// Subscribe adds fn to those told of every swap from now on.
func (s *Snapshots) Subscribe(fn Swap) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.subs = append(s.subs, fn)
}

// OnFailure adds fn to those told of every failed rebuild.
func (s *Snapshots) OnFailure(fn func(error)) {
	s.subsMu.Lock()
	defer s.subsMu.Unlock()
	s.failed = append(s.failed, fn)
}

// Current is the snapshot being served; nil before the first load.
func (s *Snapshots) Current() *snapshot.Snapshot { return s.cur.Load() }

// Degraded is why the last rebuild failed (or the database stopped
// answering); "" when all is well.
func (s *Snapshots) Degraded() string {
	if why := s.degraded.Load(); why != nil {
		return *why
	}
	return ""
}

// Degrade marks the service degraded for a reason found outside a reload
// (the database stopped answering a health check). Reads keep being
// served from the snapshot; the next successful rebuild clears it.
func (s *Snapshots) Degrade(reason error) {
	why := reason.Error()
	s.degraded.Store(&why)
}

// Reload loads a snapshot whole and swaps it in. On failure the previous
// snapshot stays and Degraded says why until a rebuild succeeds.
func (s *Snapshots) Reload(ctx context.Context) error {
	return s.Update(ctx, snapshot.Changes{All: true})
}

// Update rebuilds the snapshot for cs: only the parts it names when there
// is Data and a snapshot to start from, everything otherwise.
func (s *Snapshots) Update(ctx context.Context, cs snapshot.Changes) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	start := time.Now()
	var snap *snapshot.Snapshot
	var err error
	read := time.Duration(-1) // unknown: a whole load reads and builds at once
	prev := s.cur.Load()
	rev := cs.Revision
	if prev != nil {
		rev = max(rev, prev.StoreRevision)
	}
	if prev != nil && !cs.All && s.opts.Data != nil {
		snap, read, err = s.loadDelta(ctx, prev, cs)
	} else {
		// Read before the load: every change up to it is committed, so
		// the load sees it.
		if r, ok := s.opts.Data.(Revisions); ok {
			if n, rerr := r.StoreRevision(ctx); rerr == nil {
				rev = max(rev, n)
			}
		}
		snap, err = s.opts.Load(ctx)
	}
	if err == nil && snap == nil {
		err = fmt.Errorf("%w: load returned no snapshot", resolver.ErrUnavailable)
	}
	s.subsMu.Lock()
	subs, failed := s.subs, s.failed
	s.subsMu.Unlock()
	if err != nil {
		reason := err.Error()
		s.degraded.Store(&reason)
		for _, fn := range failed {
			fn(err)
		}
		s.log.ErrorContext(ctx, "snapshot reload failed; serving the previous snapshot", "err", err)
		return fmt.Errorf("reload snapshot: %w", err)
	}
	snap.StoreRevision = rev
	s.cur.Store(snap)
	s.degraded.Store(nil)
	for _, fn := range subs {
		fn(prev, snap)
	}
	s.scheduleSoaks(snap)
	// took, read and rebuilt, is what a change costs before it is served;
	// read is the database's part of it, when a delta was read.
	took := time.Since(start)
	if read >= 0 {
		s.log.Info("snapshot loaded", "channels", len(snap.Channels()), "loaded_at", snap.LoadedAt, "took", took, "read", read)
	} else {
		s.log.Info("snapshot loaded", "channels", len(snap.Channels()), "loaded_at", snap.LoadedAt, "took", took)
	}
	return nil
}

// Notify records a change and wakes the rebuild loop; it never blocks. A
// change that arrives while a rebuild runs is applied by the next one.
func (s *Snapshots) Notify(c snapshot.Change) {
	s.pendingMu.Lock()
	s.pending.Add(c)
	s.pendingMu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default: // a rebuild is already due; it will take this change too
	}
}

// SetChannels replaces the configured channels (a configuration reload):
// a channel removed stops being served at once; its pins and history stay
// in the database.
func (s *Snapshots) SetChannels(chs []catalog.Channel) {
	s.channels.Store(&chs)
	s.pendingMu.Lock()
	s.pending.Config = true
	s.pendingMu.Unlock()
	s.Notify(snapshot.Change{})
}

// SetLifecycle replaces the sources' lifecycle policies (a configuration
// reload re-reads them, and their files): every line is classified again.
func (s *Snapshots) SetLifecycle(policies map[string]lifecycle.Policy) {
	srcs := slices.Clone(*s.sources.Load())
	for i := range srcs {
		srcs[i].Lifecycle = policies[srcs[i].Name]
	}
	s.sources.Store(&srcs)
	s.pendingMu.Lock()
	s.pending.Config = true
	s.pendingMu.Unlock()
	s.Notify(snapshot.Change{})
}

// policies maps each configured source to its lifecycle policy.
func (s *Snapshots) policies() map[string]lifecycle.Policy {
	srcs := *s.sources.Load()
	out := make(map[string]lifecycle.Policy, len(srcs))
	for _, src := range srcs {
		out[src.Name] = src.Lifecycle
	}
	return out
}

// Run rebuilds the snapshot from the pending changes whenever Notify wakes
// it, until ctx ends; then no soak rebuilds it any more.
func (s *Snapshots) Run(ctx context.Context) {
	defer s.stopSoaks()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		s.pendingMu.Lock()
		cs := s.pending
		s.pending = snapshot.Changes{}
		s.pendingMu.Unlock()
		if cs.Empty() {
			s.applied(cs.Revision)
			continue
		}
		if err := s.Update(ctx, cs); err != nil && ctx.Err() == nil {
			// The last snapshot is kept and Degraded says why; the next
			// change, or the database coming back, reads everything.
			s.log.Warn("snapshot update failed; serving the last one", "err", err)
			s.Notify(snapshot.Change{All: true})
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// applied records that the snapshot includes store revision rev: this
// replica's own write, which it reloaded as it made it. The snapshot is
// swapped for an equal one saying so (its answers are shared, not
// recomputed), with no subscriber told: nothing it answers changed.
func (s *Snapshots) applied(rev int64) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	prev := s.cur.Load()
	if prev == nil || rev <= prev.StoreRevision {
		return
	}
	next := prev.Apply(snapshot.Delta{}, prev.LoadedAt)
	next.StoreRevision = rev
	s.cur.Store(next)
}

// WatchDatabase pings the database every so often until ctx ends. While
// it does not answer, Degraded says so (reads go on from the snapshot);
// when it answers again, everything is read anew (which clears it).
func (s *Snapshots) WatchDatabase(ctx context.Context, ping func(context.Context) error, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := ping(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if !down {
				s.log.Error("database unreachable; serving the last snapshot, writes fail", "err", err)
			}
			down = true
			s.Degrade(err)
		case down:
			down = false
			s.log.Info("database reachable again; reloading the snapshot")
			s.Notify(snapshot.Change{All: true})
		}
	}
}

// loadAll builds a snapshot from everything in Data.
func (s *Snapshots) loadAll(ctx context.Context) (*snapshot.Snapshot, error) {
	data, states, err := s.opts.Data.Load(ctx, *s.sources.Load())
	if err != nil {
		return nil, err
	}
	return snapshot.Take(*s.channels.Load(), data, states, s.opts.Now()), nil
}

// loadDelta reads only what cs names and applies it to prev; read is how
// long the database took.
func (s *Snapshots) loadDelta(ctx context.Context, prev *snapshot.Snapshot, cs snapshot.Changes) (snap *snapshot.Snapshot, read time.Duration, err error) {
	start := time.Now()
	var d snapshot.Delta
	if cs.Config {
		d.Channels = *s.channels.Load()
		d.Lifecycle = s.policies()
	}
	var sources []catalog.Source
	if len(cs.Sources) > 0 { // a pin alone does not walk every source
		for _, src := range *s.sources.Load() {
			if cs.Sources[src.Name] {
				sources = append(sources, src)
			}
		}
	}
	switch {
	case len(sources) > 0 && cs.Channels:
		// Both in one read: one round trip, and the sources and the
		// states from one snapshot of the database.
		data, states, err := s.opts.Data.Load(ctx, sources)
		if err != nil {
			return nil, 0, fmt.Errorf("load %d sources and the channel states: %w", len(sources), err)
		}
		d.Sources, d.States = data, states
	case len(sources) > 0:
		data, err := s.opts.Data.LoadSources(ctx, sources)
		if err != nil {
			return nil, 0, fmt.Errorf("load %d sources: %w", len(sources), err)
		}
		d.Sources = data
	case cs.Channels:
		states, err := s.opts.Data.LoadStates(ctx)
		if err != nil {
			return nil, 0, err
		}
		d.States = states
	}
	read = time.Since(start)
	return prev.Apply(d, s.opts.Now()), read, nil
}
