package resolver

import "time"

// Delta is what changed since a snapshot was built: the parts a reload read
// again. Everything it leaves nil or empty is taken from the old snapshot.
type Delta struct {
	// Sources replaces the indexed data of these sources (matched by name);
	// every other source's index is shared with the old snapshot as it is.
	Sources []SourceData
	// States, when non-nil, replaces every channel's database state.
	States map[string]ChannelState
	// Channels, when non-nil, replaces the configured channels.
	Channels []Channel
}

// Apply returns a new snapshot with d applied; s is not changed. Only the
// sources named in d are indexed again (the costly part: sorting and keying
// their versions); channel answers are recomputed for every channel, which
// costs one newest-first pick per channel.
func (s *Snapshot) Apply(d Delta, loadedAt time.Time) *Snapshot {
	n := &Snapshot{
		LoadedAt: loadedAt,
		sources:  make([]*sourceIndex, len(s.sources)),
		bySource: make(map[string]*sourceIndex, len(s.sources)),
	}
	copy(n.sources, s.sources)
	for i := range d.Sources {
		idx := indexSource(&d.Sources[i], loadedAt)
		name := idx.view.Source.Name
		if old, ok := s.bySource[name]; ok {
			for k, o := range n.sources {
				if o == old {
					n.sources[k] = idx
				}
			}
		} else {
			n.sources = append(n.sources, idx)
		}
	}
	for _, idx := range n.sources {
		n.bySource[idx.view.Source.Name] = idx
	}
	channels, states := s.channels, s.states
	if d.Channels != nil {
		channels = d.Channels
	}
	if d.States != nil {
		states = d.States
	}
	n.answerChannels(channels, states)
	return n
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
}

// Changes accumulates Change values between two reloads.
type Changes struct {
	All      bool
	Sources  map[string]bool
	Channels bool // some channel state changed: states are read again (one small table)
	Config   bool // the configured channels changed
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
}

// Empty reports whether cs names nothing.
func (cs *Changes) Empty() bool {
	return !cs.All && len(cs.Sources) == 0 && !cs.Channels && !cs.Config
}
