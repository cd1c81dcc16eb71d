package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// Snapshot is an immutable, fully indexed view of every source, channel, pin
// and block. The server swaps a new one in atomically after every change and
// answers every read from it; nothing here touches I/O.
//
// New does all the work (sorting, maps, every channel's answer) so
// that reads are map lookups and slice returns. Pointers and slices handed out
// point into the snapshot: callers must treat them as read-only.
type Snapshot struct {
	LoadedAt time.Time
	// StoreRevision is the store revision the snapshot includes at least
	// (every change up to it; internal/live sets it before serving it).
	StoreRevision int64

	sources   []*sourceIndex
	bySource  map[string]*sourceIndex
	answers   []ChannelAnswer
	filters   []catalog.Filter // answers[i]'s channel, constraint compiled
	byChannel map[string]int
	// steps are stepwise channels' precomputed next steps (stepwise.go);
	// nil for other channels.
	steps []map[string]*resolver.Tag
	// constraints are the clients' ?constraint= values, compiled (Versions).
	constraints catalog.ConstraintCache
	// channels and states are what the answers were computed from, kept
	// so that Apply can recompute them without the caller restating them.
	channels []catalog.Channel
	states   map[string]catalog.ChannelState
	// soakEnds maps a source to the earliest end of a soak that holds one
	// of its versions, under the source's gates or a channel's own soak.
	soakEnds map[string]time.Time
	// serials[i] names the computation of answers[i]: Apply carries it
	// with an answer it keeps (SameAnswer).
	serials []uint64
	lines   *lifecycle.Set // each source's lines classified at LoadedAt (lifecycle.go)
}

// sourceIndex is one source, indexed.
type sourceIndex struct {
	view SourceView
	// versions holds the valid tags, one per canonical version, ascending.
	versions []resolver.VersionView
	keys     []catalog.ConstraintKey // keys[i] is versions[i] as constraints see it
	// A canonical version is found by parsing it and searching versions
	// (ascending by Compare, which ties only on equal canonicals): a map
	// from every canonical string cost ~40 bytes a version. oddCanon holds
	// the rare canonical that does not parse back to itself; nil: none.
	oddCanon map[string]int
	// others holds the present tags that are not in versions: unparsed
	// ones, and valid ones another tag of the same version represents.
	// byTag finds a valid tag by name when its name is not its canonical
	// version (>= 0: versions[i]; < 0: others[-i-1]), so a lookup by raw
	// tag returns exactly that tag (its own digest). At a million tags,
	// keeping every tag a second time here cost ~330 MB per replica.
	others []resolver.VersionView
	byTag  map[string]int
	blocks map[string]catalog.Block
	// risks are the source's known risks that compile, by name.
	risks []catalog.Risk
	// soakEnd is the earliest end of a source soak still running when the
	// index was built; zero: none.
	soakEnd time.Time
}

// New indexes data. channels are the configured channels; states maps
// channel name to its database state (missing: never pinned).
func New(channels []catalog.Channel, data []catalog.SourceData, states map[string]catalog.ChannelState, loadedAt time.Time) *Snapshot {
	return newSnapshot(channels, data, states, loadedAt, false)
}

// Take is New for data the caller is done with: it sets
// each source's Tags to nil once that source is indexed. The snapshot
// copies every tag it keeps, so a load of every source would otherwise hold
// every tag twice until the end (~220 MB more at a million tags, on top of
// the snapshot still serving).
func Take(channels []catalog.Channel, data []catalog.SourceData, states map[string]catalog.ChannelState, loadedAt time.Time) *Snapshot {
	return newSnapshot(channels, data, states, loadedAt, true)
}

func newSnapshot(channels []catalog.Channel, data []catalog.SourceData, states map[string]catalog.ChannelState, loadedAt time.Time, take bool) *Snapshot {
	s := &Snapshot{
		LoadedAt: loadedAt,
		bySource: make(map[string]*sourceIndex, len(data)),
	}
	for i := range data {
		idx := indexSource(&data[i], loadedAt)
		if take {
			data[i].Tags = nil
		}
		s.sources = append(s.sources, idx)
		s.bySource[idx.view.Source.Name] = idx
	}
	s.classify(nil, nil, nil)
	s.answerChannels(channels, states, nil, true, nil)
	return s
}

// answerChannels computes every channel's answer from the indexed sources.
// With prev (Apply: the same channels), a channel whose every input is
// prev's keeps prev's answer, filter and steps (carried, below) instead of
// being answered again; changed names the sources Apply re-indexed.
func (s *Snapshot) answerChannels(channels []catalog.Channel, states map[string]catalog.ChannelState, prev *Snapshot, statesChanged bool, changed map[string]bool) {
	s.channels, s.states = channels, states
	if prev != nil {
		s.byChannel = prev.byChannel // the same channels; never written after it is built
	} else {
		s.byChannel = make(map[string]int, len(channels))
		for i := range channels {
			s.byChannel[channels[i].Name] = i
		}
	}
	s.answers = make([]ChannelAnswer, len(channels))
	s.filters = make([]catalog.Filter, len(channels))
	s.steps = make([]map[string]*resolver.Tag, len(channels))
	s.serials = make([]uint64, len(channels))
	s.soakEnds = soakEnds(s.sources, channels, s.bySource, s.LoadedAt)
	serial := answerSerial.Add(1)
	var fresh []int
	for i := range channels {
		if s.carried(prev, i, statesChanged, changed) {
			s.answers[i], s.steps[i], s.serials[i] = prev.answers[i], prev.steps[i], prev.serials[i]
			f := prev.filters[i]
			f.Channel = &s.answers[i].Channel
			s.filters[i] = f
			continue
		}
		f := catalog.ChannelFilter(&channels[i], s.LoadedAt)
		s.answers[i] = s.answer(&channels[i], states[channels[i].Name], f)
		// Keep the filter pointing at the snapshot's own copy of the channel.
		f.Channel = &s.answers[i].Channel
		s.filters[i] = f
		s.serials[i] = serial
		fresh = append(fresh, i)
	}
	for _, i := range fresh {
		s.steps[i] = s.stepTable(i)
		if rv := s.rolloutView(&s.answers[i], s.filters[i]); rv != nil {
			s.answers[i].Rollout = rv
			s.rolloutSteps(i, rv)
		}
	}
}

func indexSource(d *catalog.SourceData, now time.Time) *sourceIndex {
	idx := &sourceIndex{
		view: SourceView{
			Source:   d.Source,
			LastScan: d.LastScan,
			LastOK:   d.LastOK,
			Tags:     len(d.Tags),
			Streams:  make(map[resolver.Stream]int, 4),
			HeldBy:   map[string]int{},
		},
		byTag:  make(map[string]int),
		blocks: make(map[string]catalog.Block, len(d.Blocks)),
		risks:  catalog.CompileRisks(d.Risks),
	}
	for _, b := range d.Blocks {
		idx.blocks[b.Version] = b
	}
	view := func(t *resolver.Tag) resolver.VersionView {
		vv := resolver.VersionView{Tag: *t}
		if !t.Valid {
			return vv
		}
		if b, ok := idx.blocks[t.Version.String()]; ok {
			vv.Block(b.Reason)
		}
		idx.gate(&vv, now)
		return vv
	}
	// best maps a canonical version to the tag that represents it.
	best := make(map[string]int, len(d.Tags))
	for i := range d.Tags {
		t := &d.Tags[i]
		if !t.Valid {
			idx.view.Unparsed++
			continue
		}
		canon := t.Version.String()
		if j, ok := best[canon]; !ok || preferTag(canon, t.Name, d.Tags[j].Name) {
			best[canon] = i
		}
	}
	// Sort small keys, not VersionViews: moving the large structs dominated
	// the cost of indexing 100,000 tags. Keeping the input order (rather
	// than map order) lets pdqsort finish fast on mostly sorted input.
	type sortKey struct {
		key resolver.OrderKey
		i   int // in d.Tags
	}
	keys := make([]sortKey, 0, len(best))
	for i := range d.Tags {
		if t := &d.Tags[i]; t.Valid && best[t.Version.String()] == i {
			keys = append(keys, sortKey{t.Version.OrderKey(), i})
		}
	}
	slices.SortFunc(keys, func(x, y sortKey) int {
		if c := resolver.CompareKeys(x.key, y.key); c != 0 {
			return c
		}
		a, b := &d.Tags[x.i].Version, &d.Tags[y.i].Version
		if c := resolver.Compare(*a, *b); c != 0 {
			return c
		}
		// Compare should only tie on equal canonicals, which are deduplicated
		// above; keep the order total regardless so snapshots are reproducible.
		return cmp.Compare(a.String(), b.String())
	})
	order := make([]int, len(keys))
	for k := range keys {
		order[k] = keys[k].i
	}
	idx.versions = make([]resolver.VersionView, len(order))
	// pos is where each representative tag's version went: what
	// byCanonical finds for its canonical string, known without a search.
	pos := make([]int, len(d.Tags)) // by index in d.Tags; representatives only
	for k, i := range order {
		idx.versions[k] = view(&d.Tags[i])
		pos[i] = k
	}
	for i := range idx.versions {
		v := &idx.versions[i]
		if v.Name != v.Version.String() && !idx.parsesBack(i) {
			if idx.oddCanon == nil {
				idx.oddCanon = make(map[string]int)
			}
			idx.oddCanon[v.Version.String()] = i
		}
		idx.view.Streams[v.Stream]++
		for _, h := range v.Gates.Held() {
			idx.view.HeldBy[h]++
		}
	}
	for i := range d.Tags {
		t := &d.Tags[i]
		if !t.Valid {
			idx.others = append(idx.others, view(t))
			continue
		}
		canon := t.Version.String()
		switch {
		case best[canon] != i:
			idx.others = append(idx.others, view(t))
			idx.byTag[t.Name] = -len(idx.others)
		case t.Name != canon:
			idx.byTag[t.Name] = pos[i] // = byCanonical(canon), oddCanon included
		}
	}
	idx.keys = catalog.ConstraintKeys(idx.versions)
	return idx
}

// preferTag decides which of two tags with the same canonical version
// represents it (e.g. v1.33.6-k3s1 and v1.33.6+k3s1 both pushed): the tag
// spelled exactly like the canonical string wins, because clients turn the
// served version back into a tag; otherwise the smaller name, so the choice
// never depends on listing order. The other tag stays reachable by name.
func preferTag(canon, cand, cur string) bool {
	if (cand == canon) != (cur == canon) {
		return cand == canon
	}
	return cand < cur
}

func (s *Snapshot) source(name string) (*sourceIndex, error) {
	idx, ok := s.bySource[name]
	if !ok {
		return nil, fmt.Errorf("%w: source %q", resolver.ErrNotFound, name)
	}
	return idx, nil
}

// ChannelAnswer is a channel with its current answer.
type ChannelAnswer struct {
	Channel catalog.Channel
	State   catalog.ChannelState
	Pinned  bool          // a pin (database) or a fixed Latest (config) decides the answer
	Tag     *resolver.Tag // the version served; nil when nothing is eligible
	// Why says, when Tag is nil, why nothing is served (for the 404 body).
	Why string
	// Rollout is the channel's rollout when it has a policy and one was
	// recorded: it decides each cluster's version (rollout.go).
	Rollout *RolloutView
}

// answer evaluates one channel. A pin (database) wins over Latest (config):
// the pin is the release engineer's newer, deliberate decision.
//
// A pinned version that is blocked or no longer present yields no answer
// (404 upstream) rather than falling back to the stream. Serving it would
// defeat the block; falling back would silently unpin the channel and move
// every client to a version nobody promoted — the surprise upgrade that
// juju bug 1455260 describes. A 404 keeps clients where they are and makes
// the conflict visible, so a person re-pins or unblocks.
func (s *Snapshot) answer(c *catalog.Channel, st catalog.ChannelState, f catalog.Filter) ChannelAnswer {
	a := s.unheldAnswer(c, st, f)
	if st.Hold == nil {
		return a
	}
	// A hold keeps the version the channel answered when it began (a
	// window closed, a freeze), unless that version can no longer be
	// served: a block takes effect at once, whatever holds the channel.
	if v, ok := s.bySource[c.Source].lookupOK(st.Hold.Version); ok && v.Valid && !v.Blocked && !v.RegistryHeld {
		a.Tag, a.Why = &v.Tag, ""
	}
	return a
}

// unheldAnswer is answer without a hold: the pin, else the stream.
func (s *Snapshot) unheldAnswer(c *catalog.Channel, st catalog.ChannelState, f catalog.Filter) ChannelAnswer {
	a := ChannelAnswer{Channel: *c, State: st}
	idx := s.bySource[c.Source]
	pin := st.Pin
	if pin == "" {
		pin = c.Latest
	}
	if pin != "" {
		a.Pinned = true
		var v *resolver.VersionView
		ok := false
		if idx != nil {
			v, ok = idx.lookup(pin)
		}
		switch {
		case !ok:
			a.Why = fmt.Sprintf("channel %q is pinned to %s, which is not indexed", c.Name, pin)
		case v.Blocked:
			a.Why = fmt.Sprintf("channel %q is pinned to %s, which is blocked", c.Name, pin)
		case v.RegistryHeld:
			// A pin overrides a soak (force), never an incomplete or
			// unsigned image: like a block, it holds the pin too.
			a.Why = fmt.Sprintf("channel %q is pinned to %s, which is held by release gates (%s)", c.Name, pin, f.Gates(v).Reason())
		default:
			a.Tag = &v.Tag
		}
		return a
	}
	if idx == nil {
		a.Why = fmt.Sprintf("channel %q follows source %q, which is not configured", c.Name, c.Source)
		return a
	}
	if i := f.Pick(idx.versions, idx.keys); i >= 0 {
		a.Tag = &idx.versions[i].Tag
	} else {
		a.Why = fmt.Sprintf("no version of %q is eligible for channel %q", c.Source, c.Name)
	}
	return a
}

// Channel answers one channel. ErrNotFound when the channel is unknown; an
// answer with a nil Tag when nothing is eligible.
func (s *Snapshot) Channel(name string) (ChannelAnswer, error) {
	i, ok := s.byChannel[name]
	if !ok {
		return ChannelAnswer{}, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, name)
	}
	return s.answers[i], nil
}

// Unpinned is what channel would serve without its database pin: its
// configured Latest, else its stream. It is what an unpin moves it to.
func (s *Snapshot) Unpinned(name string) (ChannelAnswer, error) {
	i, ok := s.byChannel[name]
	if !ok {
		return ChannelAnswer{}, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, name)
	}
	c := s.answers[i].Channel
	return s.answer(&c, catalog.ChannelState{}, s.filters[i]), nil
}

// Unparsed lists the present tags of source that are not versions under
// its scheme, by name, each with why: kept and shown, never served.
func (s *Snapshot) Unparsed(source string) ([]resolver.Tag, error) {
	idx, err := s.source(source)
	if err != nil {
		return nil, err
	}
	out := make([]resolver.Tag, 0, idx.view.Unparsed)
	for i := range idx.others {
		if !idx.others[i].Valid {
			out = append(out, idx.others[i].Tag)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Channels answers every channel, in configuration order.
func (s *Snapshot) Channels() []ChannelAnswer { return s.answers }

// Eligible checks that channel may serve version (canonical or tag) if it
// followed its stream: the pin check (PUT .../pin without force). ErrNotFound
// for an unknown channel or a version that is not indexed; ErrUnprocessable,
// saying why, for an ineligible one. It returns the indexed version.
func (s *Snapshot) Eligible(channel, version string) (resolver.VersionView, error) {
	i, ok := s.byChannel[channel]
	if !ok {
		return resolver.VersionView{}, fmt.Errorf("%w: channel %q", resolver.ErrNotFound, channel)
	}
	v, err := s.Version(s.answers[i].Channel.Source, version)
	if err != nil {
		return resolver.VersionView{}, err
	}
	if why := s.filters[i].WhyNot(&v); why != "" {
		return v, fmt.Errorf("%w: %s", resolver.ErrUnprocessable, why)
	}
	return v, nil
}
