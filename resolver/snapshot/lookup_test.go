package snapshot

import (
	"sort"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// TestIndexFindsEveryTagByNameAndCanonical checks indexSource's shortcuts
// (byTag from the sorted positions, oddCanon from parsesBack) against the
// search they stand for: every tag is found by its name, every version by
// its canonical string and by its value (byVersion), and oddCanon holds exactly the versions a search
// of the parsed canonical string misses.
func TestIndexFindsEveryTagByNameAndCanonical(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scheme resolver.Scheme
		build  string
		tags   []string
	}{
		{"k3s", resolver.SchemeSemver, `k3s(\d+)`, append(benchK3sTags(300),
			"v1.33.6-k3s1", "v1.33.6+k3s1", "1.33.6+k3s1", "v1.33.7", "not-a-version", "latest")},
		{"semver spelled like canonical", resolver.SchemeSemver, "", []string{"1.0.0", "1.0.1", "1.0.10", "1.1.0-rc.1", "1.1.0", "v1.1.0", "1.2.0+meta"}},
		{"semver prefixes and metadata", resolver.SchemeSemver, "", []string{"v2.0.0", "v2.0.0+a", "v2.0.0+b", "2.0.1-alpha", "v2.0.1-alpha.1", "v2.0.1-beta+exp.sha.5114f85"}},
		{"juju", resolver.SchemeJuju, "", []string{"2.9.0", "2.9-beta1", "2.9-beta1.1", "2.9.1.2", "3.0-rc2", "3.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustParser(t, tc.scheme, tc.build)
			d := sourceData(t, "src", p, tc.tags)
			idx := indexSource(&d, testTime)
			if len(idx.versions) == 0 {
				t.Fatal("no versions indexed")
			}
			for k := range idx.versions {
				v := &idx.versions[k]
				canon := v.Version.String()
				// The search byCanonical makes when oddCanon does not have it.
				found := -1
				if pv, err := p.Parse(canon); err == nil && pv.String() == canon {
					j := sort.Search(len(idx.versions), func(j int) bool { return resolver.Compare(idx.versions[j].Version, pv) >= 0 })
					if j < len(idx.versions) && idx.versions[j].Version.String() == canon {
						found = j
					}
				}
				_, odd := idx.oddCanon[canon]
				if want := v.Name != canon && found != k; odd != want {
					t.Errorf("%s (tag %s): in oddCanon %v, want %v (search finds %d, it is at %d)", canon, v.Name, odd, want, found, k)
				}
				if got := idx.byCanonical(canon); got != k {
					t.Errorf("byCanonical(%s) = %d, want %d", canon, got, k)
				}
				if got := idx.byVersion(v.Version); got != k {
					t.Errorf("byVersion(%s) = %d, want %d", canon, got, k)
				}
			}
			for _, tag := range d.Tags {
				if !tag.Valid {
					continue // not looked up by name: the others list shows them
				}
				// Every parsed tag's version is indexed, under its representative.
				if k := idx.byVersion(tag.Version); k < 0 || idx.versions[k].Version.String() != tag.Version.String() {
					t.Errorf("byVersion(%s) of tag %s = %d", tag.Version, tag.Name, k)
				}
				got, ok := idx.lookup(tag.Name)
				if !ok {
					t.Errorf("tag %s not found by name", tag.Name)
					continue
				}
				if got.Version.String() != tag.Version.String() {
					t.Errorf("tag %s found as %s, want %s", tag.Name, got.Version, tag.Version)
				}
			}
		})
	}
}
