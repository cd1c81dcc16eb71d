// Package announce says which channels moved between two snapshots, or
// since what was last announced, as channel.changed events: what the
// notifier sends. Pure: no I/O.
package announce

import (
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// ServedChanges lists the channels whose served version differs between
// prev and next, as channel.changed events (Actor and Reason unset). A
// channel new in next, or gone from it, is a configuration change, not a
// move, and is left out; so is one whose pin changed (its revision moved),
// since the pin's own transaction recorded that event.
func ServedChanges(prev, next *snapshot.Snapshot) []resolver.Event {
	if prev == nil || next == nil {
		return nil
	}
	var out []resolver.Event
	for k, a := range next.Channels() {
		if next.SameAnswerAt(prev, k) {
			continue // carried: it serves what it served (every reload, most channels)
		}
		b, err := prev.Channel(a.Channel.Name)
		if err != nil {
			continue
		}
		if b.State.Revision != a.State.Revision || b.Channel.Source != a.Channel.Source {
			continue
		}
		from, to := servedVersion(&b), servedVersion(&a)
		if from == to {
			continue
		}
		out = append(out, resolver.Event{Type: resolver.EventChannelChanged, Channel: a.Channel.Name, Source: a.Channel.Source, From: from, To: to})
	}
	return out
}

// ServedSince lists the channel.changed events that bring recorded (each
// channel's last announced version, from the outbox) up to date with next:
// one for every channel whose served version differs. A channel never
// announced counts as having served nothing.
func ServedSince(recorded map[string]string, next *snapshot.Snapshot) []resolver.Event {
	if next == nil {
		return nil
	}
	var out []resolver.Event
	for _, a := range next.Channels() {
		from, to := recorded[a.Channel.Name], servedVersion(&a)
		if from == to {
			continue
		}
		out = append(out, resolver.Event{Type: resolver.EventChannelChanged, Channel: a.Channel.Name, Source: a.Channel.Source, From: from, To: to})
	}
	return out
}

func servedVersion(a *snapshot.ChannelAnswer) string {
	if a.Tag == nil {
		return ""
	}
	return a.Tag.Version.String()
}
