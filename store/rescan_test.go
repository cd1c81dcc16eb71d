package store_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// xmins is each tag row's xmin: the transaction that last wrote it. A row a
// scan did not touch keeps its xmin, which is timing-free evidence of the
// fast path.
func xmins(t *testing.T, u string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range query(t, u, `select tag, xmin::text from tags where source = 'src'`) {
		out[r[0].(string)] = r[1].(string)
	}
	return out
}

// rewritten lists the tags whose rows were written between two xmins snapshots.
func rewritten(before, after map[string]string) []string {
	out := []string{}
	for tag, x := range after {
		if before[tag] != x {
			out = append(out, tag)
		}
	}
	sort.Strings(out)
	return out
}

func classified(src catalog.Source, names ...string) []resolver.Tag {
	out := make([]resolver.Tag, len(names))
	for i, n := range names {
		out[i] = src.Classify(n)
	}
	return out
}

func TestNoChangeRescanWritesOnlyTheScan(t *testing.T) {
	st, u := newStore(t, "src")
	ctx := context.Background()
	src := source(t, "src")
	got := listen(t, st)
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	scan := func(at time.Time, r resolver.ScanResult) catalog.Scan {
		t.Helper()
		r.Source, r.Started, r.Finished = "src", at.Add(-time.Minute), at
		sc, err := st.ApplyScan(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}

	scan(t0, resolver.ScanResult{Complete: true, Tags: classified(src, "2.9.1", "2.9.2", "3.0-beta1", "junk")})
	if m := next(t, got); m["kind"] != "scan" || m["tags"] != "" {
		t.Errorf("first scan notification = %v, want a plain scan", m)
	}
	before := xmins(t, u)

	// The same listing in another order, with a duplicate, and a failed scan
	// in between (which must not spoil the fingerprint).
	scan(t0.Add(30*time.Minute), resolver.ScanResult{Err: errors.New("registry down")})
	next(t, got)
	sc := scan(t0.Add(time.Hour), resolver.ScanResult{Complete: true, Tags: classified(src, "junk", "3.0-beta1", "2.9.2", "2.9.1", "2.9.2")})
	want := catalog.Scan{ID: sc.ID, Source: "src", Started: sc.Started, Finished: sc.Finished, Outcome: "ok", Complete: true, TagsSeen: 4}
	if diff := cmp.Diff(want, sc); diff != "" {
		t.Errorf("rescan (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{}, rewritten(before, xmins(t, u))); diff != "" {
		t.Errorf("a no-change rescan rewrote tag rows (-want +got):\n%s", diff)
	}
	if m := next(t, got); m["kind"] != "scan" || m["tags"] != "unchanged" {
		t.Errorf("rescan notification = %v, want a scan with tags unchanged", m)
	}
	if n := query(t, u, `select count(*) from scans where source = 'src'`)[0][0].(int64); n != 3 {
		t.Errorf("scans rows = %d, want 3", n)
	}

	// Load reports the rescan as when every present tag was last seen.
	data, _, err := st.Load(ctx, []catalog.Source{src})
	if err != nil {
		t.Fatal(err)
	}
	if len(data[0].Tags) != 4 {
		t.Fatalf("loaded %d tags, want 4", len(data[0].Tags))
	}
	for _, tg := range data[0].Tags {
		if !tg.FirstSeen.Equal(t0) || !tg.LastSeen.Equal(t0.Add(time.Hour)) {
			t.Errorf("tag %s: first %v last %v; want %v and %v", tg.Name, tg.FirstSeen, tg.LastSeen, t0, t0.Add(time.Hour))
		}
	}
	if ls := data[0].LastOK; ls == nil || ls.ID != sc.ID {
		t.Errorf("last ok scan = %+v, want the rescan %d", ls, sc.ID)
	}
}

func TestRescanThatDiffersMergesOnlyWhatDiffers(t *testing.T) {
	juju := resolver.MustParser(resolver.SchemeJuju, "")
	semver := resolver.MustParser(resolver.SchemeSemver, "")
	k3s := resolver.MustParser(resolver.SchemeSemver, `k3s(\d+)`)
	type listing struct {
		src  catalog.Source
		tags []string
	}
	tests := []struct {
		name          string
		first, second listing
		want          catalog.Scan // counts only
		rewritten     []string
		present       []string
	}{
		{
			name:      "a new tag is inserted and nothing else written",
			first:     listing{catalog.Source{Parser: juju}, []string{"2.9.1", "2.9.2"}},
			second:    listing{catalog.Source{Parser: juju}, []string{"2.9.1", "2.9.2", "3.0.0"}},
			want:      catalog.Scan{TagsSeen: 3, TagsNew: 1},
			rewritten: []string{"3.0.0"},
			present:   []string{"2.9.1", "2.9.2", "3.0.0"},
		},
		{
			name:      "a removed tag is marked absent and nothing else written",
			first:     listing{catalog.Source{Parser: juju}, []string{"2.9.1", "2.9.2", "3.0.0"}},
			second:    listing{catalog.Source{Parser: juju}, []string{"2.9.1", "2.9.2"}},
			want:      catalog.Scan{TagsSeen: 2, TagsGone: 1},
			rewritten: []string{"3.0.0"},
			present:   []string{"2.9.1", "2.9.2"},
		},
		{
			name:      "a changed build pattern rewrites the tags it reclassifies",
			first:     listing{catalog.Source{Parser: semver}, []string{"v1.29.0", "v1.30.1-k3s1"}},
			second:    listing{catalog.Source{Parser: k3s}, []string{"v1.29.0", "v1.30.1-k3s1"}},
			want:      catalog.Scan{TagsSeen: 2},
			rewritten: []string{"v1.30.1-k3s1"},
			present:   []string{"v1.29.0", "v1.30.1-k3s1"},
		},
		{
			name:      "a changed scheme rewrites the tags it reclassifies",
			first:     listing{catalog.Source{Parser: juju}, []string{"2.9.1", "v1.2.3"}},
			second:    listing{catalog.Source{Parser: semver}, []string{"2.9.1", "v1.2.3"}},
			want:      catalog.Scan{TagsSeen: 2},
			rewritten: []string{"v1.2.3"},
			present:   []string{"2.9.1", "v1.2.3"},
		},
		{
			name:      "a changed label map rewrites the tags whose stream moved",
			first:     listing{catalog.Source{Parser: semver}, []string{"1.0.0", "1.0.0-rc1"}},
			second:    listing{catalog.Source{Parser: semver, Labels: resolver.Labels{"rc": resolver.Devel}}, []string{"1.0.0", "1.0.0-rc1"}},
			want:      catalog.Scan{TagsSeen: 2},
			rewritten: []string{"1.0.0-rc1"},
			present:   []string{"1.0.0", "1.0.0-rc1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, u := newStore(t, "src")
			ctx := context.Background()
			t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
			if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Finished: t0, Complete: true, Tags: classified(tt.first.src, tt.first.tags...)}); err != nil {
				t.Fatal(err)
			}
			before := xmins(t, u)
			second := classified(tt.second.src, tt.second.tags...)
			got, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Finished: t0.Add(time.Hour), Complete: true, Tags: second})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, catalog.Scan{TagsSeen: got.TagsSeen, TagsNew: got.TagsNew, TagsGone: got.TagsGone}); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.rewritten, rewritten(before, xmins(t, u))); diff != "" {
				t.Errorf("rewritten rows (-want +got):\n%s", diff)
			}
			// The rows say what the second listing's classification says.
			rows := query(t, u, `select tag, valid, coalesce(canonical, ''), coalesce(stream, '') from tags where source = 'src' and present order by tag`)
			var gotRows, wantRows [][]any
			gotRows = append(gotRows, rows...)
			byTag := map[string]resolver.Tag{}
			for _, tg := range second {
				byTag[tg.Name] = tg
			}
			for _, name := range tt.present {
				tg := byTag[name]
				canon, stream := "", ""
				if tg.Valid {
					canon, stream = tg.Version.String(), tg.Stream.String()
				}
				wantRows = append(wantRows, []any{name, tg.Valid, canon, stream})
			}
			if diff := cmp.Diff(wantRows, gotRows); diff != "" {
				t.Errorf("present rows (-want +got):\n%s", diff)
			}
			// And the same listing once more takes the fast path.
			before = xmins(t, u)
			if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Finished: t0.Add(2 * time.Hour), Complete: true, Tags: second}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{}, rewritten(before, xmins(t, u))); diff != "" {
				t.Errorf("repeat of the second listing rewrote rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPartialListingNeverTakesTheFastPath(t *testing.T) {
	st, u := newStore(t, "src")
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	step := 0
	apply := func(complete bool, names ...string) (catalog.Scan, []string) {
		t.Helper()
		before := xmins(t, u)
		step++
		sc, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Finished: t0.Add(time.Duration(step) * time.Hour), Complete: complete, Tags: tags(names...)})
		if err != nil {
			t.Fatal(err)
		}
		return sc, rewritten(before, xmins(t, u))
	}
	apply(true, "a", "b")
	// Same names, but partial: merged (last_seen refreshed), not skipped.
	if _, w := apply(false, "a", "b"); !cmp.Equal(w, []string{"a", "b"}) {
		t.Errorf("partial listing rewrote %v, want a and b (last_seen)", w)
	}
	// A partial listing that adds c; then a complete listing equal to the
	// first must merge to find c gone, though its fingerprint is the first's.
	if sc, _ := apply(false, "a", "b", "c"); sc.TagsNew != 1 {
		t.Errorf("partial listing with c: %+v, want 1 new", sc)
	}
	if sc, w := apply(true, "a", "b"); sc.TagsGone != 1 || !cmp.Equal(w, []string{"c"}) {
		t.Errorf("complete listing after a partial: %+v rewrote %v; want c gone and only c written", sc, w)
	}
	if _, w := apply(true, "a", "b"); len(w) != 0 {
		t.Errorf("repeat of a complete listing rewrote %v, want nothing", w)
	}
	if got := query(t, u, `select tag from tags where source = 'src' and present order by tag`); !cmp.Equal(got, [][]any{{"a"}, {"b"}}) {
		t.Errorf("present tags = %v, want a, b", got)
	}
}
