// Package promotion is the leader loop that moves channels with promote:
// to what their from channel answers, once the fleet's evidence says so:
// soak passed, enough clusters adopted, few stuck, no halt. The move is a
// change like any other: it passes the one decision (resolver/door), so a
// freeze holds it, a closed window defers it, approvals make it one
// pending change; it is recorded as a pin by tidemark:promotion with the
// figures, and notified as dev.tidemark.channel.promoted.
package promotion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/loop"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/resolver/promote"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Actor signs promotions; EvidenceActor, yanks. A pin by anyone else
// pauses promotion on its channel until it is unpinned.
const (
	Actor         = evidence.PromotionActor
	EvidenceActor = evidence.YankActor
)

// Store is what the loop needs of *store.Store.
type Store interface {
	EvidenceCounts(ctx context.Context, activeSince, stuckBefore time.Time) ([]resolver.EvidenceRow, map[resolver.ChannelVersion]resolver.EvidenceTold, error)
	AdoptionMedians(ctx context.Context, keys []resolver.ChannelVersion) (map[resolver.ChannelVersion]float64, error)
	RolloutHalts(ctx context.Context) (map[resolver.ChannelVersion]int, error)
	MarkTold(ctx context.Context, marks []resolver.ToldMark, now time.Time) error
	SaveEvidence(ctx context.Context, list []resolver.Evidence, at time.Time) error
	Pin(ctx context.Context, c resolver.ChannelChange) (catalog.ChannelState, error)
	ScheduleChange(ctx context.Context, c resolver.ScheduledChange) (resolver.ScheduledChange, error)
	Changes(ctx context.Context, state string, limit int) ([]resolver.ScheduledChange, error)
	Freezes(ctx context.Context, now time.Time) ([]resolver.Freeze, error)
	RolloutControl(ctx context.Context, channel, kind, actor, reason string) (resolver.Rollout, error)
	HoldVersion(ctx context.Context, source, version, channel, actor, reason string) (bool, error)
	VersionHolds(ctx context.Context, source string) (map[string]string, error)
}

// Options configure the loop.
type Options struct {
	Store    Store
	Snapshot func() *snapshot.Snapshot
	Leading  func() bool // only the leader promotes; nil: this replica
	Applied  func(snapshot.Change)
	Log      *slog.Logger
	// Every is the period of a round: an evidence pass over every
	// channel, then each promotion and yank decided. 0: 2s, so evidence
	// is at most 5 s behind the requests (1 s for the recorder's flush).
	Every   time.Duration
	Metrics prometheus.Registerer // nil: none
	Loops   *loop.Metrics         // the background loops' metrics; nil: none
	// ActiveWindow and StuckAfter are the fleet's (0: 1h each).
	ActiveWindow, StuckAfter time.Duration
	Now                      func() time.Time
}

// Status is why each promoting channel waits, for the console and the API.
type Status struct {
	Paused bool   // a person's or a token's pin pauses it
	Target string // the version it would move to
	Why    string // "" when it moved, or nothing to do
}

// Loop promotes.
type Loop struct {
	o      Options
	m      *passMetrics
	status atomic.Pointer[map[string]Status]
	med    map[resolver.ChannelVersion]median // the pass's adoption medians; Round's goroutine only
	// answered is each channel's answer to a request reporting nothing
	// as of the last round (at lastRound); Round's goroutine only.
	answered  map[string]string
	lastRound time.Time
}

// New makes the loop; an error only when its metrics are already
// registered.
func New(o Options) (*Loop, error) {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	if o.ActiveWindow <= 0 {
		o.ActiveWindow = time.Hour
	}
	if o.StuckAfter <= 0 {
		o.StuckAfter = time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	m, err := newPassMetrics(o.Metrics)
	if err != nil {
		return nil, fmt.Errorf("register evidence metrics: %w", err)
	}
	return &Loop{o: o, m: m}, nil
}

// StatusOf is channel's promotion status as of the last round.
func (l *Loop) StatusOf(channel string) (Status, bool) {
	m := l.status.Load()
	if m == nil {
		return Status{}, false
	}
	s, ok := (*m)[channel]
	return s, ok
}

// Run evaluates every Every, on the leader, until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	loop.Loop{Name: "promotion", Every: l.o.Every, Leading: l.o.Leading, Pass: l.Round, Metrics: l.o.Loops}.Run(ctx)
}

// Round records when each channel's answer became what it is, computes
// and saves every channel's evidence, then evaluates each channel with
// yank: or promote: once on it.
func (l *Loop) Round(ctx context.Context) {
	snap := l.o.Snapshot()
	if snap == nil {
		return
	}
	now := l.o.Now()
	if err := l.o.Store.MarkTold(ctx, l.toldMarks(snap, now), now); err != nil && ctx.Err() == nil {
		l.o.Log.Warn("recording what channels answer failed; evidence keeps the earlier times", "err", err)
	}
	by, err := l.pass(ctx, snap, now)
	if err != nil {
		if ctx.Err() == nil {
			l.o.Log.Warn("evidence pass failed; promotions and yanks wait for the next", "err", err)
		}
		return
	}
	status := map[string]Status{}
	for _, a := range snap.Channels() {
		if a.Channel.Yank != nil {
			if err := l.yank(ctx, snap, a, now, by[a.Channel.Name]); err != nil && ctx.Err() == nil {
				l.o.Log.Warn("yank round failed for a channel; retrying", "channel", a.Channel.Name, "err", err)
			}
		}
		if a.Channel.Promote == nil {
			continue
		}
		st, err := l.one(ctx, snap, a, now, by[a.Channel.Promote.From])
		if err != nil {
			if ctx.Err() == nil {
				l.o.Log.Warn("promotion round failed for a channel; retrying", "channel", a.Channel.Name, "err", err)
			}
			st.Why = err.Error()
		}
		status[a.Channel.Name] = st
	}
	l.status.Store(&status)
}

func (l *Loop) one(ctx context.Context, snap *snapshot.Snapshot, a snapshot.ChannelAnswer, now time.Time, list []evidence.Version) (Status, error) {
	p := a.Channel.Promote
	name := a.Channel.Name
	target, why := promote.Target(snap, name, now)
	st := Status{Target: target, Why: why, Paused: evidence.Paused(a.State.Pin, a.State.PinnedBy)}
	if target == "" || why != "" || promote.Current(snap, name, target) {
		return st, nil
	}
	holds, err := l.o.Store.VersionHolds(ctx, a.Channel.Source)
	if err != nil {
		return st, err
	}
	if why, held := holds[target]; held {
		st.Why = fmt.Sprintf("%s is held on evidence (%s): an admin lifts it", target, why)
		return st, nil
	}
	ev := evidence.Of(list, target)
	if ok, why := evidence.Ready(*p, ev, now); !ok {
		st.Why = why
		return st, nil
	}
	reason := fmt.Sprintf("promoted from %s: told %d, adopted %d, stuck %d", p.From, ev.Told, ev.Adopted, ev.Stuck)
	g := door.Governance{Approvals: a.Channel.Approvals, Windows: a.Channel.Windows}
	freezes, err := l.o.Store.Freezes(ctx, now)
	if err != nil {
		return st, err
	}
	for i := range freezes {
		if freezes[i].Covers(name, now) {
			g.Freeze = &freezes[i]
			break
		}
	}
	verdict := door.Decide(door.Change{Door: door.Promotion, Channel: name, Target: target, TargetLine: snap.TargetLine(name, target)}, resolver.Principal{Name: Actor}, g, now)
	switch verdict.Outcome {
	case door.Refuse:
		st.Why = verdict.Err.Error()
		return st, nil
	case door.Pending:
		// One pending change, not one per round.
		pending, err := l.o.Store.Changes(ctx, resolver.ChangePending, 500)
		if err != nil {
			return st, err
		}
		for _, c := range pending {
			if c.Channel == name && c.Version == target && c.RequestedBy == Actor {
				st.Why = waiting(c)
				return st, nil
			}
		}
		c, err := l.o.Store.ScheduleChange(ctx, resolver.ScheduledChange{Channel: name, Action: "pin", Version: target, Reason: reason,
			State: resolver.ChangePending, RequestedBy: Actor, RequesterIdentity: Actor, ApprovalsNeeded: verdict.Approvals,
			ExpiresAt: now.Add(24 * time.Hour)})
		if errors.Is(err, resolver.ErrConflict) {
			// Another replica's loop asked a moment ago (migration 024
			// keeps one pending promotion per channel and version).
			st.Why = "a pending change for it was just requested"
			return st, nil
		}
		if err != nil {
			return st, err
		}
		st.Why = waiting(c)
		return st, nil
	}
	cc, err := snap.PlanPin(name, target, true)
	if err != nil {
		st.Why = err.Error()
		return st, nil
	}
	cc.Actor, cc.Reason, cc.Event = Actor, reason, resolver.EventChannelPromoted
	// Only from the state this round read: a second loop (two replicas
	// believing they lead for a moment) or a person's pin since then
	// makes it a conflict, so a promotion happens once.
	cc.IfRevision = a.State.Revision
	if _, err := l.o.Store.Pin(ctx, cc); errors.Is(err, resolver.ErrConflict) {
		st.Why = "the channel changed since this round read it; the next round decides"
		return st, nil
	} else if err != nil {
		return st, err
	}
	l.o.Log.Info("channel promoted", "channel", name, "from", p.From, "version", target, "told", ev.Told, "adopted", ev.Adopted, "stuck", ev.Stuck)
	if l.o.Applied != nil {
		l.o.Applied(snapshot.Change{Channel: name})
	}
	if verdict.Outcome == door.Defer {
		st.Why = fmt.Sprintf("pinned; held until %s (%s)", verdict.Until.UTC().Format(time.RFC3339), verdict.Rule)
	}
	return st, nil
}

// yank halts and holds each version channel a serves whose clusters get
// stuck: stuck/told above the ratio with at least min_told told. A
// rollout of it is halted (no rollback); a plain channel answering it is
// pinned to the newest servable version below it, which moves no cluster
// down. A safety action: the one decision never holds it.
func (l *Loop) yank(ctx context.Context, snap *snapshot.Snapshot, a snapshot.ChannelAnswer, now time.Time, list []evidence.Version) error {
	y := a.Channel.Yank
	name := a.Channel.Name
	set, err := snap.ServedSet(name, nil, now)
	if err != nil {
		return err
	}
	for _, t := range set {
		v := t.Version.String()
		ev := evidence.Of(list, v)
		if ev.Told < y.MinTold || float64(ev.Stuck)/float64(ev.Told) <= y.MaxStuckRatio {
			continue
		}
		if verdict := door.Decide(door.Change{Door: door.Yank, Channel: name}, resolver.Principal{Name: EvidenceActor}, door.Governance{}, now); verdict.Outcome != door.Allow {
			continue
		}
		reason := fmt.Sprintf("yanked on %s: told %d, adopted %d, stuck %d", name, ev.Told, ev.Adopted, ev.Stuck)
		if rv := a.Rollout; rv != nil && !rv.Baseline && rv.To == v && rv.Progress(now).State != resolver.RolloutComplete {
			if _, err := l.o.Store.RolloutControl(ctx, name, resolver.RolloutHalt, EvidenceActor, reason); err != nil && !errors.Is(err, resolver.ErrState) {
				return err
			}
		} else if a.Tag != nil && a.Tag.Version.String() == v {
			vs, err := snap.Servable(name)
			if err != nil {
				return err
			}
			var below *resolver.VersionView
			for i := range vs {
				if resolver.Compare(vs[i].Version, t.Version) < 0 {
					below = &vs[i]
				}
			}
			if below != nil {
				cc, err := snap.PlanPin(name, below.Version.String(), true)
				if err == nil {
					cc.Actor, cc.Reason = EvidenceActor, reason
					cc.IfRevision = a.State.Revision // once, as a promotion
					if _, err := l.o.Store.Pin(ctx, cc); err != nil && !errors.Is(err, resolver.ErrConflict) {
						return err
					}
				}
			}
		}
		held, err := l.o.Store.HoldVersion(ctx, a.Channel.Source, v, name, EvidenceActor, reason)
		if err != nil {
			return err
		}
		if held {
			l.o.Log.Warn("version yanked on evidence", "channel", name, "version", v, "told", ev.Told, "stuck", ev.Stuck)
			if l.o.Applied != nil {
				l.o.Applied(snapshot.Change{Channel: name})
			}
		}
	}
	return nil
}

func waiting(c resolver.ScheduledChange) string {
	word := "approvals"
	if c.ApprovalsNeeded == 1 {
		word = "approval"
	}
	return fmt.Sprintf("change %d waits for %d %s", c.ID, c.ApprovalsNeeded, word)
}

// toldMarks is promote.ToldMarks, with one correction the snapshot cannot
// make: a channel whose answer changed since the last round by a change
// that left no later time of its own (a configuration reload: no pin, no
// newly indexed version) became that answer since then, not when the
// version was indexed; it is marked told now, at most one round late
// (never earlier than it was).
func (l *Loop) toldMarks(snap *snapshot.Snapshot, now time.Time) []resolver.ToldMark {
	marks := promote.ToldMarks(snap, now)
	answered := make(map[string]string, len(marks))
	for i, m := range marks {
		if !m.Answer {
			continue
		}
		answered[m.Channel] = m.Version
		if prev, ok := l.answered[m.Channel]; ok && prev != m.Version && m.At.Before(l.lastRound) {
			marks[i].At = now
		}
	}
	l.answered, l.lastRound = answered, now
	return marks
}
