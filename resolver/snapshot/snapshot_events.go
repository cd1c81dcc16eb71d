package snapshot

import (
	"github.com/tidemark-dev/tidemark/resolver"
)

// ServedChanges lists the channels whose served version differs between
// prev and next, as channel.changed events (Actor and Reason unset). A
// channel new in next, or gone from it, is a configuration change, not a
// move, and is left out; so is one whose pin changed (its revision moved),
// since the pin's own transaction recorded that event.
func ServedChanges(prev, next *Snapshot) []resolver.Event {
	if prev == nil || next == nil {
		return nil
	}
	var out []resolver.Event
	for k := range next.answers {
		if next.SameAnswerAt(prev, k) {
			continue // carried: it serves what it served (every reload, most channels)
		}
		a := &next.answers[k]
		i, ok := prev.byChannel[a.Channel.Name]
		if !ok {
			continue
		}
		b := &prev.answers[i]
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

// ServedSince lists the channel.changed events that bring recorded (each
// channel's last announced version, from the outbox) up to date with next:
// one for every channel whose served version differs. A channel never
// announced counts as having served nothing.
func ServedSince(recorded map[string]string, next *Snapshot) []resolver.Event {
	if next == nil {
		return nil
	}
	var out []resolver.Event
	for i := range next.answers {
		a := &next.answers[i]
		from, to := recorded[a.Channel.Name], servedVersion(a)
		if from == to {
			continue
		}
		out = append(out, resolver.Event{Type: resolver.EventChannelChanged, Channel: a.Channel.Name, Source: a.Channel.Source, From: from, To: to})
	}
	return out
}

func servedVersion(a *ChannelAnswer) string {
	if a.Tag == nil {
		return ""
	}
	return a.Tag.Version.String()
}
