package notify

import (
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// servedChanges lists the channels whose served version differs between
// prev and next, as channel.changed events (Actor and Reason unset). A
// channel new in next, or gone from it, is a configuration change, not a
// move, and is left out; so is one whose pin changed (its revision moved),
// since the pin's own transaction recorded that event.
func servedChanges(prev, next *snapshot.Snapshot) []resolver.Event {
	if prev == nil || next == nil {
		return nil
	}
	var out []resolver.Event
	answers, before := next.Channels(), prev.Channels()
	for k := range answers {
		if next.SameAnswerAt(prev, k) {
			continue // carried: it serves what it served (every reload, most channels)
		}
		a := &answers[k]
		i, ok := prev.ChannelIndex(a.Channel.Name)
		if !ok {
			continue
		}
		b := &before[i]
		if b.State.Revision != a.State.Revision || b.Channel.Source != a.Channel.Source {
			continue
		}
		from, to := servedVersion(b), servedVersion(a)
		if from == to {
			continue
		}
		out = append(out, resolver.Event{Type: resolver.EventChannelChanged, Channel: a.Channel.Name, Source: a.Channel.Source, From: from, To: to})
	}
	return out
}

// servedSince lists the channel.changed events that bring recorded (each
// channel's last announced version, from the outbox) up to date with next:
// one for every channel whose served version differs. A channel never
// announced counts as having served nothing.
func servedSince(recorded map[string]string, next *snapshot.Snapshot) []resolver.Event {
	if next == nil {
		return nil
	}
	var out []resolver.Event
	answers := next.Channels()
	for i := range answers {
		a := &answers[i]
		from, to := recorded[a.Channel.Name], servedVersion(a)
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
