package snapshot

import (
	"fmt"
	"sort"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Asker is the cluster that asks a channel, as its request describes it.
type Asker struct {
	ID          string           // X-SUC-Cluster-ID; "" when the request names none
	Reported    resolver.Version // the version it runs (X-SUC-Latest-Version or ?current=)
	HasReported bool
	Now         time.Time
	// Since is when the cluster was first seen reporting Reported, for a
	// stepwise channel's settle; Unsettled says no clock is kept for it
	// (it is held). The caller fills them only for a stepwise channel with
	// a settle and a request with an ID (Settles).
	Since     time.Time
	Unsettled bool
	// Active is the served set's fleet part (Recorder.ActiveServed): a
	// blocked cluster is steered no higher than the newest of the set.
	Active []string
}

// Settles reports whether channel c holds an asker with id for a settle:
// only then does ClusterAnswer read Since and Unsettled.
func Settles(c *catalog.Channel, id string) bool { return c.Stepwise && c.Settle > 0 && id != "" }

// HeldDowngrade is why a cluster is answered its own version: the channel's
// answer is older than what it runs, and the change that made it so was no
// rollback (CONTRACT section 13).
const HeldDowngrade = "downgrade"

// HeldBlocked is HeldDowngrade for a cluster whose own version is blocked
// and that has no servable version above it to go to (CONTRACT section
// 16): it stays, and its answer says so.
const HeldBlocked = "downgrade-blocked"

// ErrNoReportedVersion is a stepwise channel asked by a request that
// reports no version: it has no step to give.
var ErrNoReportedVersion = fmt.Errorf("%w: no reported version", resolver.ErrNotFound)

// Decision is the one decision's answer to a cluster.
type Decision struct {
	Tag  resolver.Tag
	Held string // why the cluster stays where it is; "" when not held
	// Directed: the channel's rule chose Tag (also when it equals the
	// reported version). False for a stay: the reported version echoed
	// back so that the cluster is not moved down, held, or sent somewhere
	// unservable; a stay never widens what others are served or counts.
	Directed bool
	Forced   string // ForcedExpired when it moves the cluster off an expired line
}

// ClusterAnswer is the one decision of which version a channel answers
// the cluster q describes; every surface that answers a cluster asks it.
// A rollout decides where the cluster goes (RolloutView.Dest); on a
// stepwise channel the cluster climbs there one minor at a time from its
// reported version (NextStepToward), held at it while it settles.
// A cluster is never sent down: one reporting a version newer than the
// channel's answer gets its own version back, held names why
// (HeldDowngrade), unless the channel's pin was made as a rollback or its
// rollout was halted as one. Nor above the channel: one on a blocked
// version is steered no higher than ceiling, else stays (HeldBlocked).
// ErrNotFound for an unknown channel or one with nothing eligible;
// ErrNoReportedVersion for a stepwise channel asked without a version.
func (s *Snapshot) ClusterAnswer(channel string, q Asker) (Decision, error) {
	t, dest, directed, err := s.clusterAnswer(channel, q)
	if err != nil || !q.HasReported {
		return Decision{Tag: t, Directed: err == nil}, err
	}
	if f, held, ok := s.forcedExpired(channel, q); ok { // forced.go: a directed answer unless held
		d := Decision{Tag: f, Held: held, Directed: held == ""}
		if held == "" {
			d.Forced = ForcedExpired
		}
		return d, nil
	}
	a := &s.answers[s.byChannel[channel]]
	c := resolver.Compare(q.Reported, t.Version)
	switch {
	case c < 0:
		return s.avoidRisks(channel, q, t)
	case c == 0 && directed:
		return Decision{Tag: t, Directed: true}, nil
	case c > 0 && (a.State.Rollback || a.Rollout != nil && a.Rollout.RolledBack(q.Now)):
		return Decision{Tag: t, Directed: true}, nil
	}
	// A stay: it runs a version newer than its answer, or has no step yet.
	if idx := s.bySource[a.Channel.Source]; idx != nil {
		if i := idx.byVersion(q.Reported); i >= 0 && idx.versions[i].Blocked {
			// Never named: the newest servable above it, up to the ceiling.
			top := s.ceiling(channel, q, dest)
			if up, ok := s.firstAbove(channel, q, &top, q.Reported.Minor+1); ok {
				return Decision{Tag: up, Directed: true}, nil
			}
			return Decision{Tag: s.versionTag(a.Channel.Source, q.Reported), Held: HeldBlocked}, nil
		}
	}
	if resolver.Compare(q.Reported, dest.Version) <= 0 {
		// A stepwise cluster settling, or with no step up: it stays.
		return Decision{Tag: t}, nil
	}
	return Decision{Tag: s.versionTag(a.Channel.Source, q.Reported), Held: HeldDowngrade}, nil
}

// ceiling is the newest version channel may steer the asker to: the newest
// of its served set, or on a stepwise channel its steps' destination.
func (s *Snapshot) ceiling(channel string, q Asker, dest resolver.Tag) resolver.Version {
	if s.answers[s.byChannel[channel]].Channel.Stepwise {
		return dest.Version
	}
	set, err := s.ServedSet(channel, q.Active, q.Now)
	if err != nil || len(set) == 0 {
		return dest.Version
	}
	return set[len(set)-1].Version
}

// HeldRisk is why a cluster is answered its own version: every version
// its channel could move it to is on an edge a known risk covers for it.
const HeldRisk = "risk"

// avoidRisks is ClusterAnswer's answer t for a cluster reporting an older
// version, moved off an edge a known risk covers for it (firstAbove, up to
// t); with none, the cluster stays (HeldRisk).
func (s *Snapshot) avoidRisks(channel string, q Asker, t resolver.Tag) (Decision, error) {
	a := &s.answers[s.byChannel[channel]]
	idx := s.bySource[a.Channel.Source]
	if idx == nil || len(idx.risks) == 0 || !idx.risky(q.Reported, t.Version, q.ID) {
		return Decision{Tag: t, Directed: true}, nil
	}
	if up, ok := s.firstAbove(channel, q, &t.Version, t.Version.Minor); ok {
		return Decision{Tag: up, Directed: true}, nil
	}
	return Decision{Tag: s.versionTag(a.Channel.Source, q.Reported), Held: HeldRisk}, nil
}

// firstAbove is the newest version above the reported one, up to top (nil:
// any), that the channel's rule allows and no known risk covers for the
// asker. On a plain or rollout channel any such version; on a stepwise one
// a version of minor next, else a newer one of the reported minor (never a
// skip).
func (s *Snapshot) firstAbove(channel string, q Asker, top *resolver.Version, next int) (resolver.Tag, bool) {
	i := s.byChannel[channel]
	a := &s.answers[i]
	idx := s.bySource[a.Channel.Source]
	if idx == nil {
		return resolver.Tag{}, false
	}
	f := s.filters[i]
	f.Builds = f.Builds || q.Reported.Build > 0
	vs := idx.versions
	hi := len(vs)
	if top != nil {
		hi = sort.Search(len(vs), func(k int) bool { return resolver.Compare(vs[k].Version, *top) > 0 })
	}
	ok := func(v *resolver.VersionView) bool {
		return resolver.Compare(v.Version, q.Reported) > 0 && f.OK(v) && (len(idx.risks) == 0 || !idx.risky(q.Reported, v.Version, q.ID))
	}
	minors := []int{-1} // any
	if a.Channel.Stepwise {
		minors = []int{next, q.Reported.Minor}
	}
	for _, minor := range minors {
		for k := hi - 1; k >= 0 && resolver.Compare(vs[k].Version, q.Reported) > 0; k-- {
			v := &vs[k]
			if (minor < 0 || v.Version.Major == q.Reported.Major && v.Version.Minor == minor) && ok(v) {
				return v.Tag, true
			}
		}
	}
	return resolver.Tag{}, false
}

// versionTag is source's tag of v, or one spelled as v when the index
// never saw it (a cluster reporting a version the registry no longer lists).
// A held cluster is answered this on every request: v is found by
// searching the versions, without parsing its string again.
func (s *Snapshot) versionTag(source string, v resolver.Version) resolver.Tag {
	if idx := s.bySource[source]; idx != nil {
		if i := idx.byVersion(v); i >= 0 {
			return idx.versions[i].Tag
		}
		// byVersion finds whatever a lookup by canonical string would; the
		// one lookup left is a tag literally named like that string. (The
		// full lookup parsed the string again and built an error for every
		// version never indexed: per request, for such a cluster.)
		if vv, ok := idx.byName(v.String()); ok {
			return vv.Tag
		}
	}
	return resolver.Tag{Name: v.String(), Version: v, Valid: true}
}

// clusterAnswer is the channel's rule for q: the tag, where the rule
// leads the cluster (dest: the channel's answer or its rollout's step),
// and whether the rule chose the tag (false when a stepwise cluster
// settling or without a step up is answered its own version).
func (s *Snapshot) clusterAnswer(channel string, q Asker) (t, dest resolver.Tag, directed bool, err error) {
	i, ok := s.byChannel[channel]
	if !ok {
		return t, dest, false, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, channel)
	}
	a := &s.answers[i]
	if a.Tag == nil {
		return t, dest, false, fmt.Errorf("%w: channel %q: %s", resolver.ErrNotFound, channel, a.Why)
	}
	d := a.Tag
	// A held channel (a window closed, a freeze) keeps answering what it
	// answered when the hold began: a rollout that was under way keeps
	// its clusters where it had them (the governor pauses it), and one
	// that began during the hold sends nobody anywhere until it lifts.
	if ro := a.Rollout; ro != nil && (a.State.Hold == nil || ro.StartedAt.Before(a.State.Hold.Since)) {
		if rd := ro.Dest(q.ID, q.Now); rd != nil {
			d = rd
		}
	}
	ch := &a.Channel
	if !ch.Stepwise {
		return *d, *d, true, nil
	}
	if !q.HasReported {
		return t, *d, false, fmt.Errorf("%w: channel %q is stepwise", ErrNoReportedVersion, channel)
	}
	// Settle holds a cluster at its version until it has reported it for
	// ch.Settle. A request without a cluster ID has no history to settle
	// on (a person asking with ?current=) and gets the step at once.
	if Settles(ch, q.ID) && (q.Unsettled || q.Now.Sub(q.Since) < ch.Settle) {
		return s.versionTag(ch.Source, q.Reported), *d, false, nil
	}
	if step := s.nextStepToward(i, q.Reported, d); step != nil {
		return *step, *d, true, nil
	}
	// At its destination the rule chose it; anywhere else it stays.
	return s.versionTag(ch.Source, q.Reported), *d, resolver.Compare(q.Reported, d.Version) == 0, nil
}
