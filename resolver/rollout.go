package resolver

import (
	"fmt"
	"slices"
	"time"
)

// A staged rollout (CONTRACT section 7) sends a channel's new version N to
// a growing share of its clusters, and the previous version P to the rest.
// A cluster's place in the queue is its bucket, a hash of its ID and the
// channel, so the same clusters go first every time (a canary ring).
//
// Progress is a pure function of the rollout's start, its steps, its
// interval and its events (pause, resume, advance, halt): every replica
// folds the same rows into the same answer, without talking to the others.

// RolloutPolicy is a channel's `rollout:` configuration.
type RolloutPolicy struct {
	Steps    []int         // percents of clusters, ascending, the last 100
	Interval time.Duration // how long each step lasts while running
}

// RolloutState is where a rollout stands.
type RolloutState string

// The states of a rollout.
const (
	RolloutRunning  RolloutState = "running"
	RolloutPaused   RolloutState = "paused"
	RolloutHalted   RolloutState = "halted"
	RolloutComplete RolloutState = "complete"
)

// The kinds of rollout events (audited as "rollout-" + kind).
const (
	RolloutPause   = "pause"
	RolloutResume  = "resume"
	RolloutAdvance = "advance"
	RolloutHalt    = "halt"
)

// RolloutEvent is one control event of a rollout.
type RolloutEvent struct {
	Kind   string
	At     time.Time
	Actor  string
	Reason string
	// Rollback (a halt): clusters already on To go back to From too.
	Rollback bool
}

// RolledBack reports whether r is halted at t by a halt made as a
// rollback: then even clusters that run its To are sent back to From.
func (r *Rollout) RolledBack(t time.Time) bool {
	if r.At(t).State != RolloutHalted {
		return false
	}
	for i := len(r.Events) - 1; i >= 0; i-- {
		if e := r.Events[i]; e.Kind == RolloutHalt {
			return e.Rollback
		}
	}
	return false
}

// Layer says that the clusters with bucket < Percent kept Version from an
// earlier rollout that this one superseded (see NewRollout).
type Layer struct {
	Version string `json:"version"`
	Percent int    `json:"percent"`
}

// Rollout is one rollout of a channel, as stored.
type Rollout struct {
	ID      int64
	Channel string
	// From is what clusters outside every ring get: the version the channel
	// served before (P). Carried are the rings earlier rollouts had reached
	// when this one began, innermost first: no cluster moves backward.
	From    string
	Carried []Layer
	To      string // the version rolling out (N)
	// Steps and Interval are the channel's policy when the rollout began,
	// kept so that a configuration change cannot rewrite a running one.
	Steps     []int
	Interval  time.Duration
	StartedAt time.Time
	Events    []RolloutEvent // in the order they happened
	// Baseline marks the record of what a channel served when rollouts
	// were first enabled on it: the "from" of its first rollout, not a
	// rollout itself (the API shows none).
	Baseline bool
	// RecordedStep is the last step index whose start is audited
	// (rollout-step, rollout-complete): bookkeeping, not progress.
	RecordedStep int
	Actor        string
	Reason       string
	// Replaced is, at the start, the version the channel served before
	// when it is no longer servable (a block of it started this rollout):
	// From is then To, and the history names Replaced as the from. Not
	// kept past the start.
	Replaced string
}

// Progress is a rollout at one moment.
type Progress struct {
	State RolloutState
	Step  int // index into Steps of the current step
	// Percent of clusters (by bucket) that get To: 0 while halted.
	Percent    int
	NextStepAt time.Time // when the next step begins; zero unless running
}

// Phase is a rollout folded up to some moment: its state, its step, and
// the clock of that step. clock is when the step began, moved forward by
// the time spent paused or halted; frozen is when that began.
type Phase struct {
	state  RolloutState
	step   int
	clock  time.Time
	frozen time.Time
}

// run lets the clock of a running rollout run to t, passing the step
// boundaries it crosses: floor((t - clock) / interval) of them.
func (p *Phase) run(r *Rollout, t time.Time) {
	last := len(r.Steps) - 1
	if p.state != RolloutRunning {
		return
	}
	if p.step >= last {
		p.state = RolloutComplete
		return
	}
	if r.Interval <= 0 || !t.After(p.clock) {
		return
	}
	k := int(t.Sub(p.clock) / r.Interval)
	if k <= 0 {
		return
	}
	if p.step+k >= last {
		p.clock = p.clock.Add(time.Duration(last-p.step) * r.Interval)
		p.step, p.state = last, RolloutComplete
		return
	}
	p.step += k
	p.clock = p.clock.Add(time.Duration(k) * r.Interval)
}

// apply folds one event in at its time. An event that does not apply to
// the state (a pause of a halted rollout, anything after completion) is
// ignored, so a race between two controls has one outcome everywhere.
func (p *Phase) apply(r *Rollout, e RolloutEvent) {
	p.run(r, e.At)
	switch e.Kind {
	case RolloutPause:
		if p.state == RolloutRunning {
			p.state, p.frozen = RolloutPaused, e.At
		}
	case RolloutResume:
		if p.state == RolloutPaused || p.state == RolloutHalted {
			p.clock = p.clock.Add(e.At.Sub(p.frozen))
			p.state = RolloutRunning
		}
	case RolloutAdvance:
		if p.state == RolloutRunning || p.state == RolloutPaused {
			p.step++
			p.clock, p.frozen = e.At, e.At
			if p.step >= len(r.Steps)-1 {
				p.step, p.state = len(r.Steps)-1, RolloutComplete
			}
		}
	case RolloutHalt:
		if p.state == RolloutRunning {
			p.frozen = e.At
		}
		if p.state == RolloutRunning || p.state == RolloutPaused {
			p.state = RolloutHalted
		}
	}
}

// Folded is r with every event applied (not run to any later moment).
func (r *Rollout) Folded() Phase {
	p := Phase{state: RolloutRunning, clock: r.StartedAt}
	if len(r.Steps) == 0 {
		return Phase{state: RolloutComplete}
	}
	p.run(r, r.StartedAt)
	for _, e := range r.Events {
		p.apply(r, e)
	}
	return p
}

// ProgressAt is r's progress at t from p, a fold of r (Folded).
func (r *Rollout) ProgressAt(p Phase, t time.Time) Progress {
	p.run(r, t)
	pr := Progress{State: p.state, Step: p.step}
	switch p.state {
	case RolloutComplete:
		pr.Percent = 100
	case RolloutHalted:
		pr.Percent = 0
	default:
		pr.Percent = r.Steps[p.step]
	}
	if p.state == RolloutRunning {
		pr.NextStepAt = p.clock.Add(r.Interval)
	}
	return pr
}

// At is r's progress at t.
func (r *Rollout) At(t time.Time) Progress { return r.ProgressAt(r.Folded(), t) }

// Control checks that event kind may be applied to r at t: ErrConflict,
// saying why, when the rollout's state does not allow it.
func (r *Rollout) Control(kind string, t time.Time) error {
	st := r.At(t).State
	ok := false
	switch kind {
	case RolloutPause:
		ok = st == RolloutRunning
	case RolloutResume:
		ok = st == RolloutPaused || st == RolloutHalted
	case RolloutAdvance, RolloutHalt:
		ok = st == RolloutRunning || st == RolloutPaused
	default:
		return fmt.Errorf("%w: rollout action %q: want pause, resume, advance or halt", ErrInvalid, kind)
	}
	if !ok {
		return fmt.Errorf("%w: the rollout of channel %q to %s is %s: cannot %s it", ErrState, r.Channel, r.To, st, kind)
	}
	return nil
}

// NewRollout is the rollout that begins at t when channel's version
// becomes to, superseding prev (nil when the channel has none). served is
// what the channel served before, used only without prev.
//
// The rule for a change while a rollout runs: no cluster moves backward.
// The clusters the running rollout had sent its version to (bucket <
// its percent) keep it, as a carried ring, until the new version reaches
// them; the others keep what they had. A halted rollout's clusters had
// its from again, so nothing of it is carried; a complete one's version
// is the new from.
func NewRollout(prev *Rollout, channel, served, to string, pol RolloutPolicy, t time.Time) Rollout {
	r := Rollout{Channel: channel, From: served, To: to, Steps: slices.Clone(pol.Steps), Interval: pol.Interval, StartedAt: t}
	if prev == nil {
		return r
	}
	r.From = prev.From
	p := prev.At(t)
	switch {
	case prev.Baseline || p.State == RolloutComplete:
		r.From = prev.To
	case p.State == RolloutHalted:
		r.Carried = slices.Clone(prev.Carried)
	default:
		if p.Percent > 0 {
			r.Carried = append(r.Carried, Layer{Version: prev.To, Percent: p.Percent})
		}
		for _, l := range prev.Carried {
			if l.Percent > p.Percent {
				r.Carried = append(r.Carried, l)
			}
		}
	}
	if r.From == r.To {
		// The channel went back to the version the running rollout was
		// leaving (its cause was undone: N blocked, then unblocked). Every
		// cluster outside the old ring already runs it, so there is nothing
		// to ramp: the change completes at once, and the ring that got
		// prev.To moves on with everyone else. Read as a rollout, that is
		// from prev.To, complete.
		r.From, r.Carried, r.Steps = prev.To, nil, []int{100}
	}
	return r
}

// Bucket is a cluster's place in channel's canary ring, 0..99:
// fnv32a(cluster + "/" + channel) % 100, hashed without allocating.
func Bucket(cluster, channel string) int {
	const offset, prime = 2166136261, 16777619
	h := uint32(offset)
	for i := 0; i < len(cluster); i++ {
		h = (h ^ uint32(cluster[i])) * prime
	}
	h = (h ^ '/') * prime
	for i := 0; i < len(channel); i++ {
		h = (h ^ uint32(channel[i])) * prime
	}
	return int(h % 100)
}
