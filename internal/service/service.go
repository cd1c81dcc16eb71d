// Package service is the running Tidemark replica: what runs besides
// answering HTTP, and the order it starts and stops in. It holds no rule
// and no route; cmd/tidemark wires the parts and calls Run (as wtf's Main
// and nebraska's server wiring do).
//
// Run serves HTTP and, alongside, keeps the snapshot current (changes
// announced by other replicas, the database watch, SIGHUP), runs the
// leader loops (rollouts, the governor), flushes the fleet's records and
// runs the background work it is given (the indexer, the notification
// deliverer). If serving fails on its own, everything else is stopped
// too, and Run returns only once all of it has.
package service

import (
	"context"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// HTTP serves on a listener until ctx ends, then drains (*server.Server).
type HTTP interface {
	Serve(ctx context.Context, ln net.Listener) error
}

// Options are a replica's parts. Only HTTP, Listener and Snapshots are
// required.
type Options struct {
	Log       *slog.Logger
	HTTP      HTTP
	Listener  net.Listener
	Snapshots *live.Snapshots
	// Changes delivers changes made by other processes until ctx ends
	// (*store.Store.ListenChanges); each one is applied to the snapshot.
	Changes func(ctx context.Context, fn func(snapshot.Change)) error
	// Ping checks the database every PingEvery (default 5s). While it
	// fails, /readyz says degraded; when it answers again, everything is
	// read anew.
	Ping      func(ctx context.Context) error
	PingEvery time.Duration
	// Hangup asks for Reconfigure (SIGHUP).
	Hangup <-chan os.Signal
	// Reconfigure reads the configuration again and returns its channels;
	// an error keeps the running ones.
	Reconfigure func() ([]catalog.Channel, error)
	// Fleet flushes and maintains the fleet's records; nil: none.
	Fleet *fleet.Recorder
	// Rollouts are the rollout loops; nil: none.
	Rollouts *rollouts.Loops
	// Governor applies scheduled changes and holds; nil: none.
	Governor *governor.Options
	// Background runs alongside serving (the indexer, the deliverer) and
	// is waited for.
	Background []func(ctx context.Context)
}

// Run runs the replica until ctx ends (see the package comment).
func Run(ctx context.Context, o Options) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	run := func(f func()) { wg.Go(f) }
	snaps := o.Snapshots
	run(func() { snaps.Run(ctx) })
	if o.Changes != nil {
		run(func() {
			if err := o.Changes(ctx, snaps.Notify); err != nil && ctx.Err() == nil {
				o.Log.Error("listening for changes stopped", "err", err)
			}
		})
	}
	if o.Ping != nil {
		every := o.PingEvery
		if every <= 0 {
			every = 5 * time.Second
		}
		run(func() { snaps.WatchDatabase(ctx, o.Ping, every) })
	}
	if o.Hangup != nil && o.Reconfigure != nil {
		run(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-o.Hangup:
					if chs, err := o.Reconfigure(); err == nil {
						snaps.SetChannels(chs)
					}
				}
			}
		})
	}
	if o.Rollouts != nil {
		run(func() { o.Rollouts.Run(ctx) })
	}
	if o.Governor != nil {
		run(func() { governor.Run(ctx, *o.Governor) })
	}
	for _, f := range o.Background {
		run(func() { f(ctx) })
	}
	// The fleet flusher outlives serving: requests still draining after
	// ctx ends record sightings too, and its last flush writes them.
	fctx, fstop := context.WithCancel(context.WithoutCancel(ctx))
	var fwg sync.WaitGroup
	if o.Fleet != nil {
		warn := func(msg string, args ...any) { o.Log.Warn(msg, args...) }
		fwg.Go(func() { o.Fleet.Run(fctx, warn) })
		run(func() { o.Fleet.Maintain(ctx, warn) })
	}
	err := o.HTTP.Serve(ctx, o.Listener)
	stop()
	wg.Wait()
	fstop()
	fwg.Wait()
	return err
}
