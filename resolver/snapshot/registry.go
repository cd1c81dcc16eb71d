package snapshot

import (
	"fmt"
	"slices"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// RegistryTag is one registry tag as the registry view lists it: the tag,
// its own digest, and the version it spells.
type RegistryTag struct {
	Name    string
	Digest  string
	Version resolver.Version
}

// ChannelRegistryTags lists the present registry tags of every version
// the registry view shows for channel at now (ServableWithin, with the
// fleet's active versions): every spelling of such a version, each with
// its own digest, sorted by name (the registry API's lexical order).
// ErrNotFound for an unknown channel.
func (s *Snapshot) ChannelRegistryTags(channel string, active []string, now time.Time) ([]RegistryTag, error) {
	vs, err := s.ServableWithin(channel, active, now)
	if err != nil {
		return nil, err
	}
	idx := s.bySource[s.answers[s.byChannel[channel]].Channel.Source]
	return idx.registryTags(vs), nil
}

// SourceRegistryTags lists the present registry tags of every servable
// version of source (not blocked, not held by a gate), sorted by name.
// ErrNotFound for an unknown source.
func (s *Snapshot) SourceRegistryTags(source string) ([]RegistryTag, error) {
	idx, err := s.source(source)
	if err != nil {
		return nil, err
	}
	var vs []resolver.VersionView
	for i := range idx.versions {
		if v := &idx.versions[i]; v.Valid && !v.Blocked && v.Servable {
			vs = append(vs, *v)
		}
	}
	return idx.registryTags(vs), nil
}

// registryTags is every present tag spelling one of vs's versions: vs's
// own tags and the other tags of the same canonical versions.
func (idx *sourceIndex) registryTags(vs []resolver.VersionView) []RegistryTag {
	if idx == nil {
		return []RegistryTag{}
	}
	canon := make(map[string]bool, len(vs))
	out := make([]RegistryTag, 0, len(vs))
	for i := range vs {
		canon[vs[i].Version.String()] = true
		out = append(out, RegistryTag{Name: vs[i].Name, Digest: vs[i].Digest.String(), Version: vs[i].Version})
	}
	for i := range idx.others {
		if o := &idx.others[i]; o.Valid && o.Present && canon[o.Version.String()] {
			out = append(out, RegistryTag{Name: o.Name, Digest: o.Digest.String(), Version: o.Version})
		}
	}
	slices.SortFunc(out, func(a, b RegistryTag) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// SourceImage is source's image (registry/repository); ErrNotFound for
// an unknown source.
func (s *Snapshot) SourceImage(source string) (string, error) {
	idx, err := s.source(source)
	if err != nil {
		return "", fmt.Errorf("source %q: %w", source, err)
	}
	return idx.view.Source.Image, nil
}
