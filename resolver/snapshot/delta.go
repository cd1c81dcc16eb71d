package snapshot

import (
	"maps"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// Delta is what changed since a snapshot was built: the parts a reload read
// again. Everything it leaves nil or empty is taken from the old snapshot.
type Delta struct {
	// Sources replaces the indexed data of these sources (matched by name);
	// every other source's index is shared with the old snapshot as it is.
	Sources []catalog.SourceData
	// States, when non-nil, replaces every channel's database state.
	States map[string]catalog.ChannelState
	// Channels, when non-nil, replaces the configured channels.
	Channels []catalog.Channel
	// Lifecycle, when non-nil, replaces every source's lifecycle policy
	// (a configuration reload), by source name.
	Lifecycle map[string]lifecycle.Policy
}

// Apply returns a new snapshot with d applied; s is not changed. Only the
// sources named in d are indexed again (the costly part: sorting and keying
// their versions), and only the channels they, d.States or d.Channels touch
// are answered again; every other channel keeps its answer (SameAnswer).
func (s *Snapshot) Apply(d Delta, loadedAt time.Time) *Snapshot {
	n := &Snapshot{
		LoadedAt: loadedAt,
		sources:  slices.Clone(s.sources),
		// A copy of the old map with the changed sources replaced: cloning
		// is a bulk copy, where inserting 1,000 names again was a fifth of
		// a reload's rebuild (BenchmarkApplyOneSource).
		bySource: maps.Clone(s.bySource),
	}
	if n.bySource == nil {
		n.bySource = map[string]*sourceIndex{}
	}
	var changed map[string]bool // the sources d re-indexed, by name
	for i := range d.Sources {
		idx := indexSource(&d.Sources[i], loadedAt)
		name := idx.view.Source.Name
		if old, ok := n.bySource[name]; ok {
			for k, o := range n.sources {
				if o == old {
					n.sources[k] = idx
				}
			}
		} else {
			n.sources = append(n.sources, idx)
		}
		n.bySource[name] = idx
		if changed == nil {
			changed = make(map[string]bool, len(d.Sources))
		}
		changed[name] = true
	}
	for _, name := range n.classify(s.lines, changed, d.Lifecycle) {
		if changed == nil {
			changed = map[string]bool{}
		}
		changed[name] = true
	}
	channels, states, prev := s.channels, s.states, s
	if d.Channels != nil {
		channels, prev = d.Channels, nil
	}
	if d.States != nil {
		states = d.States
	}
	n.answerChannels(channels, states, prev, d.States != nil, changed)
	return n
}

// answerSerial numbers channel-answer computations, process-wide, so that
// equal serials mean one computation carried from snapshot to snapshot.
var answerSerial atomic.Uint64

// carried reports whether channel i can keep prev's answer: the channels
// are prev's (Apply without Channels), the channel's source was not
// re-indexed (changed names those that were: every other source's index
// is the very one prev answered from), and its state is unchanged. Time
// moves on between the two, and the one answer that depends on it, a
// soak, is rebuilt when the soak ends (SoakEnds names the source, and
// whoever holds the snapshot reloads it then).
func (s *Snapshot) carried(prev *Snapshot, i int, statesChanged bool, changed map[string]bool) bool {
	if prev == nil {
		return false
	}
	c := &s.channels[i]
	if changed[c.Source] {
		return false
	}
	return !statesChanged || sameState(s.states[c.Name], prev.states[c.Name])
}

// sameState compares two states field by field; only a rollout (rare, and
// a tree of events) needs reflect.
func sameState(a, b catalog.ChannelState) bool {
	if a.Pin != b.Pin || a.PinDigest != b.PinDigest || a.PinnedBy != b.PinnedBy || a.Revision != b.Revision || a.Rollback != b.Rollback ||
		!a.PinnedAt.Equal(b.PinnedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) {
		return false
	}
	if (a.Hold == nil) != (b.Hold == nil) || a.Hold != nil && *a.Hold != *b.Hold {
		return false
	}
	return (a.Rollout == nil) == (b.Rollout == nil) && (a.Rollout == nil || reflect.DeepEqual(a.Rollout, b.Rollout))
}

// SameAnswer reports whether channel's answer in s is prev's, carried by
// Apply unchanged (with its steps and rollout view): whatever a reader
// derived from prev's answer still holds. False when either lacks it.
func (s *Snapshot) SameAnswer(prev *Snapshot, channel string) bool {
	if prev == nil {
		return false
	}
	i, ok := s.byChannel[channel]
	j, pok := prev.byChannel[channel]
	return ok && pok && s.serials[i] == prev.serials[j]
}

// SameAnswerAt is SameAnswer for the channel at position i of Channels(),
// without looking its name up twice: what a reload does for every channel.
// Apply carries an answer at its position (it carries nothing when the
// channels change), and no two computations share a serial, so equal
// serials at i say what equal serials under one name say.
func (s *Snapshot) SameAnswerAt(prev *Snapshot, i int) bool {
	return prev != nil && i < len(prev.serials) && s.serials[i] == prev.serials[i]
}

// SameSourceAt is SameSource for the source at position i of Sources():
// Apply keeps every source at its position (a source it adds goes last)
// and shares the index of each it does not re-index.
func (s *Snapshot) SameSourceAt(prev *Snapshot, i int) bool {
	return prev != nil && i < len(prev.sources) && s.sources[i] == prev.sources[i]
}

// SameSource reports whether source's index in s is prev's, kept by
// Apply because no change named it.
func (s *Snapshot) SameSource(prev *Snapshot, source string) bool {
	if prev == nil {
		return false
	}
	idx, ok := s.bySource[source]
	return ok && idx == prev.bySource[source]
}

// Change names what one notification says changed, so that a reload reads
// and rebuilds only that part. The zero Change names nothing.
type Change struct {
	// All: anything may have changed (a reconnect lost notifications, the
	// configuration was reloaded): read everything.
	All bool
	// Source's tags, digests, scans or blocks changed.
	Source string
	// Channel's database state (its pin) changed.
	Channel string
	// Revision is the store revision the change was committed at (0:
	// unknown); a Change naming nothing else only says it was applied
	// already (this replica's own write).
	Revision int64
}

// Changes accumulates Change values between two reloads.
type Changes struct {
	All      bool
	Sources  map[string]bool
	Channels bool  // some channel state changed: states are read again (one small table)
	Config   bool  // the configured channels changed
	Revision int64 // the highest store revision of the changes
}

// Add merges c into cs.
func (cs *Changes) Add(c Change) {
	switch {
	case c.All:
		cs.All = true
	case c.Source != "":
		if cs.Sources == nil {
			cs.Sources = make(map[string]bool)
		}
		cs.Sources[c.Source] = true
	}
	if c.Channel != "" {
		cs.Channels = true
	}
	cs.Revision = max(cs.Revision, c.Revision)
}

// Empty reports whether cs names nothing.
func (cs *Changes) Empty() bool {
	return !cs.All && len(cs.Sources) == 0 && !cs.Channels && !cs.Config
}
