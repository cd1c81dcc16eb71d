package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Data is where snapshots come from (*store.Store). With Options.Data set,
// the server reads only what a change touched: one source's tags, or the
// channel states, rather than every tag of every source.
type Data interface {
	Load(ctx context.Context, sources []resolver.Source) ([]resolver.SourceData, map[string]resolver.ChannelState, error)
	LoadSources(ctx context.Context, sources []resolver.Source) ([]resolver.SourceData, error)
	LoadStates(ctx context.Context) (map[string]resolver.ChannelState, error)
}

// RunOptions are what a running service watches besides HTTP: all optional.
type RunOptions struct {
	// Changes delivers changes made by other processes until ctx ends
	// (*store.Store.ListenChanges); each one is applied to the snapshot.
	Changes func(ctx context.Context, fn func(resolver.Change)) error
	// Ping checks the database every PingEvery (default 5s). While it
	// fails, /readyz says degraded; when it answers again, everything is
	// read anew.
	Ping      func(ctx context.Context) error
	PingEvery time.Duration
	// Hangup asks for Reconfigure (SIGHUP).
	Hangup <-chan os.Signal
	// Reconfigure reads the configuration again and returns its channels;
	// an error keeps the running ones.
	Reconfigure func() ([]resolver.Channel, error)
	// Background runs alongside serving (the indexer) and is waited for.
	Background []func(ctx context.Context)
}

// Run serves on ln and keeps the snapshot current until ctx ends: it
// applies changes as they are announced (coalescing a burst into one
// rebuild), watches the database, and reconfigures on hangup. If serving
// fails on its own, everything else is stopped too, and Run returns only
// once all of it has.
func (s *Server) Run(ctx context.Context, ln net.Listener, ro RunOptions) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	run := func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	run(func() { s.applyChanges(ctx) })
	if ro.Changes != nil {
		run(func() {
			if err := ro.Changes(ctx, s.Notify); err != nil && ctx.Err() == nil {
				s.log.Error("listening for changes stopped", "err", err)
			}
		})
	}
	if ro.Ping != nil {
		every := ro.PingEvery
		if every <= 0 {
			every = 5 * time.Second
		}
		run(func() { s.watchDatabase(ctx, ro.Ping, every) })
	}
	if ro.Hangup != nil && ro.Reconfigure != nil {
		run(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-ro.Hangup:
					if chs, err := ro.Reconfigure(); err == nil {
						s.SetChannels(chs)
					}
				}
			}
		})
	}
	if s.opts.Rollouts.Store != nil && s.opts.Rollouts.Leading != nil {
		run(func() { s.runRollouts(ctx) })
	}
	if s.opts.Rollouts.Store != nil {
		run(func() { s.countRollouts(ctx) })
	}
	if g := s.opts.Governance; g != nil {
		run(func() {
			governor.Run(ctx, governor.Options{Store: g, Log: s.log, Kick: s.governKick,
				Snapshot: func() *resolver.Snapshot {
					if v := s.cur.Load(); v != nil {
						return v.snap
					}
					return nil
				},
				Applied: s.Notify, Observe: s.metrics.governance})
		})
	}
	for _, f := range ro.Background {
		run(func() { f(ctx) })
	}
	// The fleet flusher outlives serving: requests still draining after
	// ctx ends record sightings too, and its last flush writes them.
	fctx, fstop := context.WithCancel(context.WithoutCancel(ctx))
	var fwg sync.WaitGroup
	if s.opts.Fleet.Store != nil {
		warn := func(msg string, args ...any) { s.log.Warn(msg, args...) }
		fwg.Go(func() { s.fleet.Run(fctx, warn) })
		run(func() { s.fleet.Maintain(ctx, warn) })
	}
	defer s.stopSoaks()
	err := s.Serve(ctx, ln)
	stop()
	wg.Wait()
	fstop()
	fwg.Wait()
	return err
}

// Notify records a change and wakes the reload loop; it never blocks. A
// change that arrives while a rebuild runs is applied by the next one.
func (s *Server) Notify(c resolver.Change) {
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
func (s *Server) SetChannels(chs []resolver.Channel) {
	s.channels.Store(&chs)
	s.pendingMu.Lock()
	s.pending.Config = true
	s.pendingMu.Unlock()
	s.Notify(resolver.Change{})
}

// applyChanges rebuilds the snapshot from the pending changes whenever
// Notify wakes it, until ctx ends.
func (s *Server) applyChanges(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.kick:
		}
		s.pendingMu.Lock()
		cs := s.pending
		s.pending = resolver.Changes{}
		s.pendingMu.Unlock()
		if cs.Empty() {
			continue
		}
		if err := s.update(ctx, cs); err != nil && ctx.Err() == nil {
			// The server keeps the last snapshot and reports degraded; the
			// next change, or the database coming back, reads everything.
			s.log.Warn("snapshot update failed; serving the last one", "err", err)
			s.Notify(resolver.Change{All: true})
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// watchDatabase pings the database every so often. While it does not
// answer, /readyz says degraded (reads go on from the snapshot); when it
// answers again, everything is read anew (which clears the degraded state).
func (s *Server) watchDatabase(ctx context.Context, ping func(context.Context) error, every time.Duration) {
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
			s.Notify(resolver.Change{All: true})
		}
	}
}

// loadAll builds a snapshot from everything in Data.
func (s *Server) loadAll(ctx context.Context) (*resolver.Snapshot, error) {
	data, states, err := s.opts.Data.Load(ctx, s.opts.Sources)
	if err != nil {
		return nil, err
	}
	return resolver.TakeSnapshot(*s.channels.Load(), data, states, time.Now()), nil
}

// loadDelta reads only what cs names and applies it to prev; read is how
// long the database took.
func (s *Server) loadDelta(ctx context.Context, prev *resolver.Snapshot, cs resolver.Changes) (snap *resolver.Snapshot, read time.Duration, err error) {
	start := time.Now()
	var d resolver.Delta
	if cs.Config {
		d.Channels = *s.channels.Load()
	}
	if len(cs.Sources) > 0 {
		var sources []resolver.Source
		for _, src := range s.opts.Sources {
			if cs.Sources[src.Name] {
				sources = append(sources, src)
			}
		}
		data, err := s.opts.Data.LoadSources(ctx, sources)
		if err != nil {
			return nil, 0, fmt.Errorf("load %d sources: %w", len(sources), err)
		}
		d.Sources = data
	}
	if cs.Channels {
		states, err := s.opts.Data.LoadStates(ctx)
		if err != nil {
			return nil, 0, err
		}
		d.States = states
	}
	read = time.Since(start)
	return prev.Apply(d, time.Now()), read, nil
}
