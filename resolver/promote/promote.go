// Package promote is the part of the domain that promotion from evidence
// reads from a snapshot: what a promoting channel would move to and why it
// waits (the leader's loop, the channel object and the console ask the
// same function), and since when each channel answers what it answers
// (when a version's soak starts). Pure: no I/O.
package promote

import (
	"fmt"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Target is the version channel's promote: would move it to at
// now, and why it may not (as a person reads it; "" when only evidence,
// holds and the one decision are left to say). It moves only up: while
// its from channel answers an older version than it does, it waits, and
// says which. Target is "" when there is nothing to move to; when the
// channel already answers it, why is "" and Current says so. Every
// promotion surface asks it: the leader's loop, the channel object, the
// console.
func Target(s *snapshot.Snapshot, channel string, now time.Time) (target, why string) {
	a, err := s.Channel(channel)
	if err != nil || a.Channel.Promote == nil {
		return "", ""
	}
	p := a.Channel.Promote
	if evidence.Paused(a.State.Pin, a.State.PinnedBy) {
		return "", fmt.Sprintf("paused: %s pinned it; unpin it to resume promotion", a.State.PinnedBy)
	}
	from, err := s.Channel(p.From)
	if err != nil || from.Tag == nil {
		return "", fmt.Sprintf("%s answers nothing", p.From)
	}
	if rv := from.Rollout; rv != nil && !rv.Baseline && rv.Progress(now).State != resolver.RolloutComplete {
		return "", fmt.Sprintf("%s is rolling out: it promotes once the rollout is complete", p.From)
	}
	target = from.Tag.Version.String()
	if a.Tag != nil {
		switch c := resolver.Compare(from.Tag.Version, a.Tag.Version); {
		case c == 0:
			return target, ""
		case c < 0:
			return "", fmt.Sprintf("%s answers an older version (%s)", p.From, target)
		}
	}
	if vv, err := s.Version(a.Channel.Source, target); err != nil || vv.Blocked || !vv.Servable {
		return target, fmt.Sprintf("%s is not servable on %s", target, channel)
	}
	return target, ""
}

// Current says whether channel already answers version: a promotion to it
// has nothing left to do.
func Current(s *snapshot.Snapshot, channel, version string) bool {
	a, err := s.Channel(channel)
	return err == nil && a.Tag != nil && a.Tag.Version.String() == version
}

// ToldMarks is, for every channel, the version it answers a request that
// reports nothing and since when (its pin's time when pinned, else when
// the channel last changed or the version was first indexed, whichever is
// later, never after now), and for a rollout channel the version rolling
// out, from the rollout's start. Evidence counts a version as told from
// the earliest of these and the first directed answer: never from what a
// cluster reports.
func ToldMarks(s *snapshot.Snapshot, now time.Time) []resolver.ToldMark {
	var out []resolver.ToldMark
	for _, a := range s.Channels() {
		if a.Tag == nil {
			continue
		}
		t := a.Tag
		if rv := a.Rollout; rv != nil {
			if !rv.Baseline && rv.To != "" {
				out = append(out, resolver.ToldMark{Channel: a.Channel.Name, Version: rv.To, At: rv.StartedAt})
			}
			if d := rv.Dest("", now); d != nil {
				t = d
			}
		}
		v := t.Version.String()
		at := a.State.UpdatedAt
		if a.State.Pin == v && !a.State.PinnedAt.IsZero() {
			at = a.State.PinnedAt
		} else if seen := t.FirstSeen.Time(); !t.FirstSeen.IsZero() && seen.After(at) {
			at = seen
		}
		if at.IsZero() || at.After(now) {
			at = now
		}
		out = append(out, resolver.ToldMark{Channel: a.Channel.Name, Version: v, At: at, Answer: true})
	}
	return out
}
