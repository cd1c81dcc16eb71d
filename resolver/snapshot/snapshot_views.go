package snapshot

import (
	"fmt"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// The read side of a Snapshot: sources and versions as the API lists them.

// SourceView is one source with its indexing status and counts.
type SourceView struct {
	Source   catalog.Source
	LastScan *catalog.Scan
	LastOK   *catalog.Scan
	Tags     int                     // present tags, parsed or not
	Unparsed int                     // present tags that are not versions
	Streams  map[resolver.Stream]int // versions per stream (one per canonical version)
	HeldBy   map[string]int          // versions held per gate ("platforms", "signature", "soak"), the source's gates
}

// Sources lists sources in configuration order.
func (s *Snapshot) Sources() []SourceView {
	out := make([]SourceView, len(s.sources))
	for i, idx := range s.sources {
		out[i] = idx.view
	}
	return out
}

// NumSources is how many sources Sources() lists.
func (s *Snapshot) NumSources() int { return len(s.sources) }

// SourceAt is Sources()[i] without copying the others; SourceNameAt its
// name alone.
func (s *Snapshot) SourceAt(i int) SourceView { return s.sources[i].view }

// SourceNameAt is the name of the source at position i of Sources().
func (s *Snapshot) SourceNameAt(i int) string { return s.sources[i].view.Source.Name }

// ChannelIndex is channel's position in Channels(); false when unknown.
func (s *Snapshot) ChannelIndex(channel string) (int, bool) {
	i, ok := s.byChannel[channel]
	return i, ok
}

// SourceInfo is one source; ErrNotFound when unknown.
func (s *Snapshot) SourceInfo(name string) (SourceView, error) {
	idx, err := s.source(name)
	if err != nil {
		return SourceView{}, err
	}
	return idx.view, nil
}

// Versions lists a source's valid versions ascending, filtered by stream
// (nested) and a Masterminds constraint ("" for none). ErrNotFound for an
// unknown source; ErrInvalid for a bad constraint. Blocked versions are listed
// (marked) so operators can see them.
//
// It runs per request with a client's constraint, so the constraint comes
// compiled from a bounded cache, and when every version qualifies the
// snapshot's own slice is returned (capacity capped, so an append copies).
func (s *Snapshot) Versions(source string, stream resolver.Stream, constraintText string) ([]resolver.VersionView, error) {
	idx, err := s.source(source)
	if err != nil {
		return nil, err
	}
	var cons *catalog.Constraint
	if constraintText != "" {
		cons, err = s.constraints.Get(constraintText)
		if err != nil {
			return nil, fmt.Errorf("%w: constraint %q: %w", resolver.ErrInvalid, constraintText, err)
		}
	}
	inStream := func(i int) bool { return stream.Includes(idx.versions[i].Stream) }
	if cons == nil {
		n := 0
		for i := range idx.versions {
			if inStream(i) {
				n++
			}
		}
		if n == len(idx.versions) {
			return idx.versions[:n:n], nil
		}
		out := make([]resolver.VersionView, 0, n)
		for i := range idx.versions {
			if inStream(i) {
				out = append(out, idx.versions[i])
			}
		}
		return out, nil
	}
	// Count first: the result is often a small part of a large source, and
	// an exact allocation beats growing (or over-allocating) a copy. The
	// scans go downwards, so the copy fills from the end.
	n := 0
	for i := len(idx.versions); ; n++ {
		if i = cons.Scan(idx.versions, idx.keys, i, inStream); i < 0 {
			break
		}
	}
	if n == len(idx.versions) {
		return idx.versions[:n:n], nil
	}
	out := make([]resolver.VersionView, n)
	for i, j := len(idx.versions), n; j > 0; {
		i = cons.Scan(idx.versions, idx.keys, i, inStream)
		j--
		out[j] = idx.versions[i]
	}
	return out, nil
}

// Version finds one version by canonical string or by raw tag. ErrNotFound
// for an unknown source, a tag that is not a version, or no such version.
func (s *Snapshot) Version(source, versionOrTag string) (resolver.VersionView, error) {
	idx, err := s.source(source)
	if err != nil {
		return resolver.VersionView{}, err
	}
	v, ok := idx.lookup(versionOrTag)
	if !ok {
		return resolver.VersionView{}, fmt.Errorf("%w: version %q of source %q", resolver.ErrNotFound, versionOrTag, source)
	}
	return *v, nil
}

// Servable is ServableWithin at the snapshot's load, with no fleet: the
// versions a channel may serve as its own answers and rollout make them.
func (s *Snapshot) Servable(channel string) ([]resolver.VersionView, error) {
	return s.ServableWithin(channel, nil, s.LoadedAt)
}
