// Package rollouts runs the loops behind staged rollouts (CONTRACT
// section 7) outside HTTP: the indexing leader's recording of the
// rollouts indexing starts and of the steps as they pass, and every
// replica's counting of its rollouts' clusters for the channel object.
// Neither decides what anyone is served: progress is computed from the
// recorded start and events (resolver.Rollout).
package rollouts

import (
	"context"
	"log/slog"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/loop"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Store keeps staged rollouts (*store.Store).
type Store interface {
	// StartRollout records st unless another replica recorded the change
	// first (started false).
	StartRollout(ctx context.Context, st snapshot.RolloutStart) (started bool, err error)
	// RecordRolloutStep audits the steps r passed up to step, once.
	RecordRolloutStep(ctx context.Context, r resolver.Rollout, step int) (bool, error)
	// ServedCounts counts the clusters last served each channel's version,
	// for many at once.
	ServedCounts(ctx context.Context, keys []resolver.ChannelVersion) (map[resolver.ChannelVersion]int, error)
}

// Options configures the loops.
type Options struct {
	Store Store
	// Snapshot is the snapshot being served; Notify asks for the channels
	// a recorded rollout or step changed to be read again.
	Snapshot func() *snapshot.Snapshot
	Notify   func(snapshot.Change)
	// Leading reports whether this replica holds the indexer lock: the
	// leader records the rollouts that indexing starts (a new version
	// moves a channel with no request to hang it on) and the steps as
	// they pass. nil: never.
	Leading func() bool
	// Every is how often the leader looks. 0: 1s.
	Every time.Duration
	// CountEvery is how often the clusters are counted. 0: 15s.
	CountEvery time.Duration
	// DBTimeout bounds one count. 0: config.DefaultDatabaseTimeout.
	DBTimeout time.Duration
	// Counts receives the counts (the server's channel objects read them).
	Counts *Counts
	Log    *slog.Logger
	// Loops counts and times the loops' passes; nil: none.
	Loops *loop.Metrics
}

// Loops are the rollout loops of one replica.
type Loops struct {
	opts                Options
	leadKick, countKick chan struct{}
}

// New makes the loops; Swapped wakes them, Run runs them.
func New(opts Options) *Loops {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.CountEvery <= 0 {
		opts.CountEvery = defaultCountEvery
	}
	if opts.DBTimeout <= 0 {
		opts.DBTimeout = config.DefaultDatabaseTimeout
	}
	if opts.Counts == nil {
		opts.Counts = &Counts{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Loops{opts: opts, leadKick: loop.NewKick(), countKick: loop.NewKick()}
}

// Swapped wakes both loops after a snapshot change (live.Swap); it never
// blocks.
func (l *Loops) Swapped(_, _ *snapshot.Snapshot) {
	loop.Kick(l.leadKick)
	loop.Kick(l.countKick)
}

// Run runs the counting loop, and the leader's loop when Leading is set,
// until ctx ends.
//
// The leader's loop, after every snapshot change and every Every, records
// the rollouts that indexing started (a channel whose version moved away
// from its last rollout's) and audits the steps that have passed. A
// leader that is late only makes the history late.
func (l *Loops) Run(ctx context.Context) {
	done := make(chan struct{})
	if l.opts.Leading != nil {
		lead := loop.Loop{Name: "rollouts-lead", Every: l.opts.Every, Kick: l.leadKick, Leading: l.opts.Leading,
			Pass: l.leadOnce, Metrics: l.opts.Loops}
		go func() { defer close(done); lead.Run(ctx) }()
	} else {
		close(done)
	}
	l.count(ctx)
	<-done
}

func (l *Loops) leadOnce(ctx context.Context) {
	snap := l.opts.Snapshot()
	if snap == nil {
		return
	}
	st, log := l.opts.Store, l.opts.Log
	now := time.Now()
	for _, a := range snap.Channels() {
		name := a.Channel.Name
		if a.State.Hold != nil {
			continue // held: its rollout waits for the window or the freeze's end
		}
		if start, ok := snap.PendingRollout(name); ok {
			started, err := st.StartRollout(ctx, start)
			if err != nil {
				log.Warn("could not start a rollout; retrying", "channel", name, "to", start.To, "err", err)
				continue
			}
			if started {
				log.Info("rollout started", "channel", name, "to", start.To, "baseline", start.Baseline)
				l.opts.Notify(snapshot.Change{Channel: name})
			}
			continue
		}
		rv := a.Rollout
		if rv == nil || rv.Baseline {
			continue
		}
		p := rv.Progress(now)
		if p.Step <= rv.RecordedStep {
			continue
		}
		recorded, err := st.RecordRolloutStep(ctx, rv.Rollout, p.Step)
		if err != nil {
			log.Warn("could not record a rollout step; retrying", "channel", name, "step", p.Step+1, "err", err)
			continue
		}
		if recorded {
			what := "step"
			if p.State == resolver.RolloutComplete {
				what = "complete"
			}
			log.Info("rollout changed", "channel", name, "from", rv.From, "to", rv.To, "event", what, "actor", "tidemark")
			l.opts.Notify(snapshot.Change{Channel: name})
		}
	}
}
