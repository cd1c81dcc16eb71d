package snapshot

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// refPick is Pick as it was before constraints were compiled: every version
// checked with Masterminds.
func refPick(c *catalog.Channel, versions []resolver.VersionView) int {
	f := catalog.Filter{Channel: c, Stream: c.Stream, Builds: c.Builds} // no constraint compiled
	for i := len(versions) - 1; i >= 0; i-- {
		v := &versions[i]
		if f.OK(v) && (c.Constraint == nil || c.Constraint.Check(catalog.ConstraintVersion(v.Version))) {
			return i
		}
	}
	return -1
}

// TestPickMatchesMasterminds runs every table constraint as a channel over
// the fixtures and k3s-shaped tags, with and without the index's keys.
func TestPickMatchesMasterminds(t *testing.T) {
	k3s := sourceData(t, "k3s-upgrade", mustParser(t, resolver.SchemeSemver, `k3s(\d+)`), benchK3sTags(600))
	s := New(nil, []catalog.SourceData{jujuData(t, "2.9.42"), k3sData(t), k3s}, nil, testTime)
	var texts []string
	texts = append(texts, testutil.Lines(t, filepath.Join("..", "catalog", "testdata", "constraints.txt"))...)
	texts = append(texts, "~1.10", "~1.11.3", ">=1.12.0-0 <1.13", "1.10.x || 1.11.0-rc2")
	for _, idx := range s.sources {
		for _, text := range texts {
			for _, stream := range []resolver.Stream{resolver.Released, resolver.Testing} {
				c := catalog.Channel{Name: "c", Stream: stream, Constraint: testutil.Constraint(t, text), ConstraintText: text}
				want := refPick(&c, idx.versions)
				f := catalog.ChannelFilter(&c, testTime)
				if got := f.Pick(idx.versions, idx.keys); got != want {
					t.Errorf("%s %q on %s: keyed pick %d, Masterminds %d", idx.view.Source.Name, text, stream, got, want)
				}
				if got := f.Pick(idx.versions, nil); got != want {
					t.Errorf("%s %q on %s: pick %d, Masterminds %d", idx.view.Source.Name, text, stream, got, want)
				}
			}
		}
	}
}

// TestVersionsMatchMasterminds: the skipping scans Versions uses list
// exactly what Masterminds accepts.
func TestVersionsMatchMasterminds(t *testing.T) {
	k3s := sourceData(t, "k3s-upgrade", mustParser(t, resolver.SchemeSemver, `k3s(\d+)`), benchK3sTags(600))
	s := New(nil, []catalog.SourceData{jujuData(t), k3s}, nil, testTime)
	texts := append([]string{"~1.10", ">=1.12.0-0 <1.13", "1.10.x || 1.11.0-rc2", "2.9.x-0 || >3.0.0-beta1"}, testutil.Lines(t, filepath.Join("..", "catalog", "testdata", "constraints.txt"))...)
	for _, src := range []string{"jujud-operator", "k3s-upgrade"} {
		all, err := s.Versions(src, resolver.Testing, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			for _, stream := range []resolver.Stream{resolver.Released, resolver.Testing} {
				ms := testutil.Constraint(t, text)
				var want []string
				for i := range all {
					if stream.Includes(all[i].Stream) && ms.Check(catalog.ConstraintVersion(all[i].Version)) {
						want = append(want, all[i].Version.String())
					}
				}
				got, err := s.Versions(src, stream, text)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, canons(got), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s %q on %s (-Masterminds +got):\n%s", src, text, stream, diff)
				}
			}
		}
	}
}

func TestConstraintPathsAllocateNothing(t *testing.T) {
	c := catalog.Channel{Name: "c", Source: "k3s-upgrade", Stream: resolver.Testing, Constraint: testutil.Constraint(t, "~1.10"), ConstraintText: "~1.10"}
	s := New([]catalog.Channel{c}, []catalog.SourceData{sourceData(t, "k3s-upgrade", mustParser(t, resolver.SchemeSemver, `k3s(\d+)`), benchK3sTags(1000))}, nil, testTime)
	idx := s.bySource["k3s-upgrade"]
	f := s.filters[0]
	for _, tc := range []struct {
		name string
		max  float64
		run  func()
	}{
		{"pick", 0, func() { f.Pick(idx.versions, idx.keys) }},
		{"Versions unfiltered", 0, func() { _, _ = s.Versions("k3s-upgrade", resolver.Testing, "") }},
		{"Versions filtered allocates the result only", 1, func() { _, _ = s.Versions("k3s-upgrade", resolver.Released, "~1.10 || >=1.15.2") }},
		// Only the error is built: the cache spares the parse (hundreds).
		{"Versions with a bad constraint (cached)", 8, func() { _, _ = s.Versions("k3s-upgrade", resolver.Released, "~1.10 |") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(20, tc.run); got > tc.max {
				t.Errorf("%v allocations, want at most %v", got, tc.max)
			}
		})
	}
}

// Requests compile and read constraints concurrently (run with -race).
func TestConstraintCacheConcurrent(t *testing.T) {
	s := testSnapshot(t, nil, nil)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				text := fmt.Sprintf("~1.%d || >=%d.0", i%40, g)
				if _, err := s.Versions("k3s-upgrade", resolver.Testing, text); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
