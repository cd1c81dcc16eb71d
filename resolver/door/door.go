// Package door is the one decision for every change of what a channel
// answers: each entry (a door) describes its change and asks Decide.
package door

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// The one decision for every change. Every entry
// that changes what a channel answers (the API's writes, the console,
// which writes through the API, the scheduler applying a change, rollout
// controls, the governor, Alertmanager halts, promotion from evidence)
// describes its change as a Change and asks Decide; none checks a rule by
// itself. Like an admission chain, the rules run in one order:
//
//  1. scope: the principal's channel limit (a token's --channels, a
//     sign-in role) and, for override_freeze, scope admin;
//  2. freeze: refuses a person's pin, unpin, advance or resume; holds a
//     scheduled change or a promotion until it ends;
//  3. window: defers a pin, unpin, scheduled change or promotion to the
//     next window; refuses advance and resume;
//  4. approvals: the change waits for them, whatever was overridden.
//
// Before the freeze, a move to a version whose line has expired is
// refused (expired.go) unless an admin sends allow_expired; a promotion
// never takes one.
//
// Safety actions (block, unblock, halt, an alert's halt, a yank, pause)
// pass the scope rule only: nothing may hold back making a channel safer.

// Door is one entry through which a channel's answer can change.
type Door string

// Every door. A new entry is added here, and the table test of Decide
// refuses a door without its row.
const (
	Pin            Door = "api.pin"
	Unpin          Door = "api.unpin"
	Schedule       Door = "api.schedule"        // a change requested for later
	ApplyScheduled Door = "governor.apply"      // the governor applying a due change
	ApplyApproved  Door = "api.approve"         // the last approval applying a change at once
	RolloutAdvance Door = "api.rollout.advance" // a person's advance
	RolloutResume  Door = "api.rollout.resume"  // a person's resume
	RolloutPause   Door = "api.rollout.pause"   // safety
	RolloutHalt    Door = "api.rollout.halt"    // safety, with or without rollback
	AlertHalt      Door = "alertmanager.halt"   // safety
	GovernorPause  Door = "governor.pause"      // the governor pausing a held channel's rollout
	GovernorResume Door = "governor.resume"     // ... and resuming it once the channel may move
	Block          Door = "api.block"           // safety (source-wide)
	Unblock        Door = "api.unblock"         // safety (source-wide)
	Promotion      Door = "evidence.promotion"  // a promotion from evidence
	Yank           Door = "evidence.yank"       // safety
	// The console writes through the API with its header; its doors are
	// the API's, counted apart.
	ConsolePin      Door = "console.pin"
	ConsoleUnpin    Door = "console.unpin"
	ConsoleSchedule Door = "console.schedule"
	ConsoleAdvance  Door = "console.rollout.advance"
	ConsoleResume   Door = "console.rollout.resume"
)

// Doors lists every door, for the table test and the docs.
var Doors = []Door{Pin, Unpin, Schedule, ApplyScheduled, ApplyApproved, RolloutAdvance,
	RolloutResume, RolloutPause, RolloutHalt, AlertHalt, GovernorPause, GovernorResume,
	Block, Unblock, Promotion, Yank, ConsolePin, ConsoleUnpin,
	ConsoleSchedule, ConsoleAdvance, ConsoleResume}

// Console is door d as the console reaches it (the same rules).
func Console(d Door) Door {
	switch d {
	case Pin:
		return ConsolePin
	case Unpin:
		return ConsoleUnpin
	case Schedule:
		return ConsoleSchedule
	case RolloutAdvance:
		return ConsoleAdvance
	case RolloutResume:
		return ConsoleResume
	}
	return d
}

// doorKind is how the rules treat a door.
type doorKind int

const (
	kindPersonMove doorKind = iota // a person's (or token's) pin or unpin: refused by a freeze, deferred by a window
	kindControl                    // a person's advance or resume: refused by a freeze or a closed window
	kindRequest                    // a change requested for later: only scope and approvals apply now
	kindSystemMove                 // a scheduled or approved change applying, a promotion: held by a freeze, deferred by a window
	kindSafety                     // never held
)

var doorKinds = map[Door]doorKind{
	Pin: kindPersonMove, Unpin: kindPersonMove, Schedule: kindRequest,
	ConsolePin: kindPersonMove, ConsoleUnpin: kindPersonMove, ConsoleSchedule: kindRequest,
	RolloutAdvance: kindControl, RolloutResume: kindControl, ConsoleAdvance: kindControl, ConsoleResume: kindControl,
	ApplyScheduled: kindSystemMove, Promotion: kindSystemMove, ApplyApproved: kindSystemMove,
	RolloutPause: kindSafety, RolloutHalt: kindSafety, AlertHalt: kindSafety, Block: kindSafety,
	Unblock: kindSafety, Yank: kindSafety, GovernorPause: kindSafety, GovernorResume: kindSafety,
}

// Outcome is what Decide says of a change.
type Outcome string

const (
	Allow   Outcome = "allow"   // apply now
	Defer   Outcome = "defer"   // record now; it takes effect at Until (the answer is held until then)
	Pending Outcome = "pending" // record it as waiting for approvals
	Refuse  Outcome = "refuse"  // do nothing; Err says why
)

// Rules, as a Verdict names the one that decided.
const (
	RuleScope     = "scope"
	RuleOverride  = "override"
	RuleFreeze    = "freeze"
	RuleWindow    = "window"
	RuleApprovals = "approvals"
	RuleExpired   = "expired"
)

// Change is a change as an entry describes it to Decide.
type Change struct {
	Door    Door
	Channel string
	// Override is override_freeze as asked: it lifts a freeze or a closed
	// window for this one change, and is an admin's alone.
	Override bool
	// Overridden: the change was recorded with an admin's override (a
	// pending change now approved, or a scheduled one now due).
	Overridden bool
	// Target is the version the change moves the channel to ("" for an
	// unpin or a control) and TargetLine its line (Snapshot.TargetLine);
	// AllowExpired is allow_expired as asked, an admin's alone.
	Target       string
	TargetLine   *lifecycle.Line
	AllowExpired bool
}

// Governance is a channel's governance at the time of the change.
type Governance struct {
	Approvals int              // approvals: N; 0: none
	Freeze    *resolver.Freeze // the freeze covering the channel now; nil: none
	Windows   []resolver.Window
}

// Verdict is Decide's answer.
type Verdict struct {
	Outcome Outcome
	// Rule is the rule that decided a Refuse, Defer or Pending ("" for a
	// plain Allow; "override" when an admin's override let it through).
	Rule string
	// Until is when a deferred change takes effect (the freeze's end or
	// the next window's start); zero: unknown.
	Until time.Time
	// Approvals is how many a Pending change needs.
	Approvals int
	// Overridden: an admin's override lifted a freeze or a closed window.
	Overridden bool
	// AllowedExpired: an admin's allow_expired let a move to an expired
	// version through (the audit says so).
	AllowedExpired bool
	// Err is a Refuse's error: it wraps resolver.ErrScope, resolver.ErrFrozen or
	// resolver.ErrWindowClosed and names the rule's particulars.
	Err error
}

// Decide is the one decision. p is who asks (for the scheduler and the
// governor, the system principal); now is the decision's time.
func Decide(c Change, p resolver.Principal, g Governance, now time.Time) Verdict {
	kind, ok := doorKinds[c.Door]
	if !ok {
		return Verdict{Outcome: Refuse, Rule: RuleScope, Err: fmt.Errorf("%w: unknown door %q", resolver.ErrScope, c.Door)}
	}
	// (1) Scope.
	if c.Channel != "" && !p.MayWriteChannel(c.Channel) {
		return Verdict{Outcome: Refuse, Rule: RuleScope, Err: fmt.Errorf("%w: %q is limited to channels [%s]; channel %q is not one of them", resolver.ErrScope, p.Name, strings.Join(p.Channels, ","), c.Channel)}
	}
	if c.Override && !p.Admin() {
		return Verdict{Outcome: Refuse, Rule: RuleOverride, Err: fmt.Errorf("%w: override_freeze is an admin's: %s has no scope admin", resolver.ErrScope, p.Name)}
	}
	if c.AllowExpired && !p.Admin() {
		return Verdict{Outcome: Refuse, Rule: RuleScope, Err: fmt.Errorf("%w: allow_expired is an admin's: %s has no scope admin", resolver.ErrScope, p.Name)}
	}
	if kind == kindSafety {
		return Verdict{Outcome: Allow}
	}
	v := Verdict{Outcome: Allow}
	if refused := expired(c, kind, &v); refused != nil {
		return *refused
	}
	override := c.Override || c.Overridden
	if kind == kindRequest {
		// For later: the freeze and the windows of its time apply then.
		g.Freeze, g.Windows = nil, nil
	}
	// (2) resolver.Freeze.
	if f := g.Freeze; f != nil && f.Covers(c.Channel, now) {
		switch {
		case override:
			v.Overridden, v.Rule = true, RuleOverride
		case kind == kindPersonMove || kind == kindControl:
			return Verdict{Outcome: Refuse, Rule: RuleFreeze, Until: f.Until, Err: fmt.Errorf(
				`%w: channel %q is frozen until %s (%q, freeze %d); an admin may send "override_freeze": true`,
				resolver.ErrFrozen, c.Channel, f.Until.UTC().Format(time.RFC3339), f.Reason, f.ID)}
		case kind == kindSystemMove:
			v = Verdict{Outcome: Defer, Rule: RuleFreeze, Until: f.Until}
		}
	}
	// (3) resolver.Window.
	if v.Outcome == Allow && !resolver.InWindow(g.Windows, now) {
		next := resolver.NextWindow(g.Windows, now)
		switch {
		case override:
			v.Overridden, v.Rule = true, RuleOverride
		case kind == kindControl:
			return Verdict{Outcome: Refuse, Rule: RuleWindow, Until: next, Err: fmt.Errorf(
				`%w: channel %q is outside its windows; the next opens at %s (%s); an admin may send "override_freeze": true`,
				resolver.ErrWindowClosed, c.Channel, clock(next, g.Windows), next.UTC().Format(time.RFC3339))}
		case kind == kindPersonMove || kind == kindSystemMove:
			v = Verdict{Outcome: Defer, Rule: RuleWindow, Until: next}
		}
	}
	// (4) Approvals, whatever was overridden; a change already approved
	// applies (at once when its override lifted a freeze or a window).
	if g.Approvals > 0 && (kind == kindPersonMove || kind == kindRequest || c.Door == Promotion) {
		return Verdict{Outcome: Pending, Rule: RuleApprovals, Approvals: g.Approvals, Overridden: v.Overridden}
	}
	return v
}

// clock is t as HH:MM in the windows' zone (UTC without windows).
func clock(t time.Time, ws []resolver.Window) string {
	if t.IsZero() {
		return "an unknown time"
	}
	loc := time.UTC
	if len(ws) > 0 && ws[0].Location != nil {
		loc = ws[0].Location
	}
	return t.In(loc).Format("15:04")
}
