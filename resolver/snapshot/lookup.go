package snapshot

import (
	"sort"

	"github.com/tidemark-dev/tidemark/resolver"
)

// byCanonical is the index in versions of the version spelled canon, or -1.
func (idx *sourceIndex) byCanonical(canon string) int {
	if i, ok := idx.oddCanon[canon]; ok {
		return i
	}
	p := idx.view.Source.Parser
	if p == nil || len(idx.versions) == 0 {
		return -1
	}
	v, err := p.Parse(canon)
	if err != nil || v.String() != canon {
		return -1
	}
	i := sort.Search(len(idx.versions), func(i int) bool { return resolver.Compare(idx.versions[i].Version, v) >= 0 })
	if i < len(idx.versions) && idx.versions[i].Version.String() == canon {
		return i
	}
	return -1
}

// byVersion is byCanonical for a version in hand: the position of the
// indexed version with v's canonical string, -1 when none, found by one
// search (versions are sorted by Compare, keys first: OrderKey) with no
// parse. Compare ties only on equal canonical strings; if it ever tied on
// two, the search could land on the other one, and the check says -1.
func (idx *sourceIndex) byVersion(v resolver.Version) int {
	vs, k := idx.versions, v.OrderKey()
	i := sort.Search(len(vs), func(i int) bool {
		if c := resolver.CompareKeys(vs[i].Version.OrderKey(), k); c != 0 {
			return c > 0
		}
		return resolver.Compare(vs[i].Version, v) >= 0
	})
	if i < len(vs) && vs[i].Version.String() == v.String() {
		return i
	}
	return -1
}

// parsesBack reports whether byCanonical, without oddCanon, finds
// versions[i] by its canonical string: whether the string parses back to a
// version equal to it (versions are sorted by Compare and hold one version
// a canonical string, and Compare ties only on equal canonical strings, so
// the search lands on i exactly then). A tag spelled like its canonical
// string parsed to it, so only the others need this check.
func (idx *sourceIndex) parsesBack(i int) bool {
	p := idx.view.Source.Parser
	if p == nil {
		return false
	}
	v, err := p.Parse(idx.versions[i].Version.String())
	return err == nil && resolver.Compare(v, idx.versions[i].Version) == 0
}

// lookup finds a valid version by canonical string, then by raw tag.
func (idx *sourceIndex) lookup(versionOrTag string) (*resolver.VersionView, bool) {
	if i := idx.byCanonical(versionOrTag); i >= 0 {
		return &idx.versions[i], true
	}
	return idx.byName(versionOrTag)
}

// byName finds a valid version by its raw tag: a representative in
// versions, or a tag that shares its version with one (others).
func (idx *sourceIndex) byName(tag string) (*resolver.VersionView, bool) {
	i, ok := idx.byTag[tag]
	switch {
	case !ok:
		return nil, false
	case i < 0:
		return &idx.others[-i-1], true
	}
	return &idx.versions[i], true
}

// lookupOK is lookup on a source index that may be nil (a channel whose
// source is not configured any more).
func (idx *sourceIndex) lookupOK(versionOrTag string) (*resolver.VersionView, bool) {
	if idx == nil {
		return nil, false
	}
	return idx.lookup(versionOrTag)
}
