// Package governor is the leader loop of governance (CONTRACT section
// 15): it applies scheduled changes when their time comes (exactly once:
// the store claims each change in the transaction that applies it), fails
// pending changes whose approvals did not come in time, and records a
// hold for every channel outside its windows or under a freeze (the
// version it answered when the hold began), lifting it after.
//
// It runs on every replica, and needs no leader: the store claims each
// change in the transaction that applies it, so it is applied once
// whoever gets there first, and a replica killed a second before a
// change's time costs nothing while another lives. A hold is begun with
// BeginHold, which keeps the version of a hold already recorded (the
// first replica to hold a channel decides it), so replicas holding the
// same channel at once agree.
package governor

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tidemark-dev/tidemark/internal/loop"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Store is what the governor needs of *store.Store.
type Store interface {
	DueChanges(ctx context.Context, now time.Time) ([]resolver.ScheduledChange, error)
	ApplyChange(ctx context.Context, id int64, plan func(resolver.ScheduledChange) (resolver.ChannelChange, error)) (resolver.ScheduledChange, bool, error)
	ExpireChanges(ctx context.Context, now time.Time) ([]resolver.ScheduledChange, error)
	Freezes(ctx context.Context, now time.Time) ([]resolver.Freeze, error)
	SetHold(ctx context.Context, channel string, hold *resolver.Hold) error
	BeginHold(ctx context.Context, channel string, hold resolver.Hold) error
	RolloutControl(ctx context.Context, channel, kind, actor, reason string) (resolver.Rollout, error)
}

// Actor is how the governor signs what it does (rollout pauses and
// resumes around holds).
const Actor = "tidemark-governor"

// System is the governor as the one decision's principal: every channel,
// no override.
var System = resolver.Principal{Name: Actor}

// Options configures Run.
type Options struct {
	Store    Store
	Snapshot func() *snapshot.Snapshot
	// Applied is told of every change the governor made (a change applied
	// or failed, a hold set or lifted), so the replica reloads what it
	// touched at once (Server.Notify).
	Applied func(snapshot.Change)
	// Observe counts outcomes: "applied", "failed", "expired", "held",
	// "released". nil: none.
	Observe func(outcome string)
	Log     *slog.Logger
	// Every is the tick; 0: one second (a change is applied within it).
	Every time.Duration
	Now   func() time.Time // nil: time.Now
	// Kick asks for a round now (a freeze declared or cancelled).
	Kick <-chan struct{}
	// Loops counts and times the rounds; nil: none.
	Loops *loop.Metrics
}

// Run governs until ctx ends: a round every Every and at each kick.
func Run(ctx context.Context, o Options) {
	loop.Loop{Name: "governor", Every: cmp.Or(o.Every, time.Second), Kick: o.Kick, Metrics: o.Loops,
		Pass: func(ctx context.Context) { Tick(ctx, o) }}.Run(ctx)
}

// Tick does one round: expiries, due changes, holds.
func Tick(ctx context.Context, o Options) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	now := o.Now()
	observe := func(s string) {
		if o.Observe != nil {
			o.Observe(s)
		}
	}
	expired, err := o.Store.ExpireChanges(ctx, now)
	if err != nil {
		o.Log.Warn("could not expire pending changes; retrying", "err", err)
	}
	for _, c := range expired {
		o.Log.Info("change expired waiting for approvals", "change", c.ID, "channel", c.Channel)
		observe("expired")
	}
	due, err := o.Store.DueChanges(ctx, now)
	if err != nil {
		o.Log.Warn("could not read due changes; retrying", "err", err)
	}
	for _, d := range due {
		c, applied, err := o.Store.ApplyChange(ctx, d.ID, func(c resolver.ScheduledChange) (resolver.ChannelChange, error) {
			return Plan(o.Snapshot(), c)
		})
		switch {
		case err != nil:
			o.Log.Warn("could not apply a scheduled change; retrying", "change", d.ID, "err", err)
			continue
		case !applied:
			continue
		case c.State == resolver.ChangeFailed:
			o.Log.Warn("scheduled change failed", "change", c.ID, "channel", c.Channel, "reason", c.Outcome)
			observe("failed")
		default:
			o.Log.Info("scheduled change applied", "change", c.ID, "channel", c.Channel, "action", c.Action, "version", c.Version,
				"late", now.Sub(c.At).Round(time.Millisecond))
			observe("applied")
			if c.Override {
				moveHold(ctx, o, c)
			}
		}
		if o.Applied != nil {
			o.Applied(snapshot.Change{Channel: c.Channel})
		}
	}
	holds(ctx, o, now, observe)
}

// Plan turns a scheduled change into the pin or unpin it makes, checked
// against snap now: a version blocked or no longer eligible fails it.
func Plan(snap *snapshot.Snapshot, c resolver.ScheduledChange) (resolver.ChannelChange, error) {
	if snap == nil {
		return resolver.ChannelChange{}, resolver.ErrUnavailable
	}
	var cc resolver.ChannelChange
	var err error
	if c.Action == "unpin" {
		cc, err = snap.PlanUnpin(c.Channel)
	} else {
		cc, err = snap.PlanPin(c.Channel, c.Version, c.Force)
	}
	if err != nil {
		return cc, err
	}
	cc.Reason, cc.Rollback = c.Reason, c.Rollback
	return cc, nil
}

// moveHold makes an applied change that an admin's override carried take
// effect through a hold: the hold moves to its version (or lifts, for an
// unpin, until the next round holds the new answer).
func moveHold(ctx context.Context, o Options, c resolver.ScheduledChange) {
	snap := o.Snapshot()
	if snap == nil {
		return
	}
	a, err := snap.Channel(c.Channel)
	if err != nil || a.State.Hold == nil {
		return
	}
	var next *resolver.Hold
	if c.Action == "pin" {
		moved := *a.State.Hold
		moved.Version = c.Version
		next = &moved
	}
	if err := o.Store.SetHold(ctx, c.Channel, next); err != nil {
		o.Log.Warn("an overridden change applied; could not move its channel's hold", "change", c.ID, "err", err)
	}
}

// holds sets and lifts every channel's hold.
func holds(ctx context.Context, o Options, now time.Time, observe func(string)) {
	snap := o.Snapshot()
	if snap == nil {
		return
	}
	freezes, err := o.Store.Freezes(ctx, now)
	if err != nil {
		o.Log.Warn("could not read freezes; holds wait", "err", err)
		return
	}
	for _, a := range snap.Channels() {
		name := a.Channel.Name
		want := Want(&a.Channel, freezes, now)
		have := a.State.Hold
		holdRollout(ctx, o, &a, want != nil, now)
		switch {
		case want == nil && have == nil:
			continue
		case want == nil:
			if err := o.Store.SetHold(ctx, name, nil); err != nil {
				o.Log.Warn("could not lift a hold; retrying", "channel", name, "err", err)
				continue
			}
			o.Log.Info("channel released: its window opened or its freeze ended", "channel", name)
			observe("released")
		case have == nil:
			if a.Tag == nil {
				continue // nothing served, nothing to hold
			}
			want.Version = a.Tag.Version.String()
			if err := o.Store.BeginHold(ctx, name, *want); err != nil {
				o.Log.Warn("could not hold a channel; retrying", "channel", name, "err", err)
				continue
			}
			o.Log.Info("channel held", "channel", name, "version", want.Version, "reason", want.Reason, "until", want.Until)
			observe("held")
		case have.Reason != want.Reason || !have.Until.Equal(want.Until):
			want.Version = have.Version
			if err := o.Store.BeginHold(ctx, name, *want); err != nil {
				o.Log.Warn("could not update a hold; retrying", "channel", name, "err", err)
				continue
			}
		default:
			continue
		}
		if o.Applied != nil {
			o.Applied(snapshot.Change{Channel: name})
		}
	}
}

// Want is the hold channel c should have at now: the one decision's
// deferral of a change applied now (a freeze covering it, else its windows
// when none is open); nil when it may move. Version is left for the
// caller.
func Want(c *catalog.Channel, freezes []resolver.Freeze, now time.Time) *resolver.Hold {
	g := door.Governance{Windows: c.Windows}
	for i := range freezes {
		if freezes[i].Covers(c.Name, now) {
			g.Freeze = &freezes[i]
			break
		}
	}
	v := door.Decide(door.Change{Door: door.ApplyScheduled, Channel: c.Name}, System, g, now)
	if v.Outcome != door.Defer {
		return nil
	}
	reason := "window"
	if v.Rule == door.RuleFreeze {
		reason = g.Freeze.Reason
	}
	return &resolver.Hold{Reason: reason, Until: v.Until.UTC()}
}

// holdRollout pauses a running rollout of a channel that is held, so its
// steps wait for the window or the freeze's end, and resumes one it paused
// once the channel may move again. A rollout a person paused stays paused.
// Replicas racing for it get a conflict, which is fine.
func holdRollout(ctx context.Context, o Options, a *snapshot.ChannelAnswer, held bool, now time.Time) {
	rv := a.Rollout
	if rv == nil || rv.Baseline {
		return
	}
	state := rv.Progress(now).State
	var kind, reason string
	switch {
	case held && state == resolver.RolloutRunning && !overriddenBy(&rv.Rollout, a.State.Hold):
		kind, reason = resolver.RolloutPause, "the channel is held (a window closed or a freeze began): its steps wait"
	case !held && state == resolver.RolloutPaused && pausedByGovernor(&rv.Rollout):
		kind, reason = resolver.RolloutResume, "the channel may move again"
	default:
		return
	}
	d := map[string]door.Door{resolver.RolloutPause: door.GovernorPause, resolver.RolloutResume: door.GovernorResume}[kind]
	if v := door.Decide(door.Change{Door: d, Channel: a.Channel.Name}, System, door.Governance{}, now); v.Outcome != door.Allow {
		return // never: a safety action the governor makes on any channel
	}
	if _, err := o.Store.RolloutControl(ctx, a.Channel.Name, kind, Actor, reason); err != nil {
		if !errors.Is(err, resolver.ErrConflict) {
			o.Log.Warn("could not "+kind+" a held channel's rollout; retrying", "channel", a.Channel.Name, "err", err)
		}
		return
	}
	o.Log.Info("rollout "+kind+"d around a hold", "channel", a.Channel.Name)
	if o.Applied != nil {
		o.Applied(snapshot.Change{Channel: a.Channel.Name})
	}
}

// overriddenBy reports whether r's last event is a resume made during
// hold by someone other than the governor: only an admin's override_freeze
// can make one then, and the governor must not undo it.
func overriddenBy(r *resolver.Rollout, hold *resolver.Hold) bool {
	if n := len(r.Events); n > 0 && hold != nil {
		e := r.Events[n-1]
		return e.Kind == resolver.RolloutResume && e.Actor != Actor && !e.At.Before(hold.Since)
	}
	return false
}

// pausedByGovernor reports whether r's last pause is the governor's.
func pausedByGovernor(r *resolver.Rollout) bool {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if e := r.Events[i]; e.Kind == resolver.RolloutPause {
			return e.Actor == Actor
		}
	}
	return false
}
