package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// A version number a tag may carry (up to 18 digits) need not fit the
// tags table's integer columns, which are for SQL readers. A listing with
// one such tag is recorded whole, by each path that writes tags: a first
// listing, a merge, a push. The number is NULL in its column; the tag is
// served, because a load parses names again.
func TestTagsWithNumbersPastInt4AreRecorded(t *testing.T) {
	ctx := context.Background()
	st, u := newStore(t, "src")
	p, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		t.Fatal(err)
	}
	src := catalog.Source{Name: "src", Image: "example.com/src", Parser: p}
	atLimit, past := "v2147483647.0.0", "v1.2147483648.0"
	huge := "v1.0.999999999999999999" // 18 digits: the most a number may have
	apply := func(complete bool, names ...string) {
		t.Helper()
		res := resolver.ScanResult{Source: "src", Complete: complete, Tags: classified(src, names...)}
		if _, err := st.ApplyScan(ctx, res); err != nil {
			t.Fatalf("apply scan of %q: %v", names, err)
		}
	}
	apply(true, "v1.0.0", atLimit, past)       // a first listing: one COPY into tags
	apply(true, "v1.0.0", atLimit, past, huge) // a merge through the temp table
	apply(false, "v1.0.1")                     // a partial listing merges too
	pushed := src.Classify("v3000000000.1.2")
	pushed.Digest = resolver.ParseDigest("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	if _, err := st.IndexTag(ctx, "src", pushed, time.Now()); err != nil {
		t.Fatalf("push of %s: %v", pushed.Name, err)
	}

	got := map[string][]any{}
	for _, r := range query(t, u, `select tag, major, minor, patch from tags where source = 'src' and present`) {
		got[r[0].(string)] = r[1:]
	}
	want := map[string][]any{
		"v1.0.0":          {int32(1), int32(0), int32(0)},
		"v1.0.1":          {int32(1), int32(0), int32(1)},
		atLimit:           {int32(2147483647), int32(0), int32(0)},
		past:              {int32(1), nil, int32(0)},
		huge:              {int32(1), int32(0), nil},
		"v3000000000.1.2": {nil, int32(1), int32(2)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags table (-want +got):\n%s", diff)
	}
	data, err := st.LoadSources(ctx, []catalog.Source{src})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, tg := range data[0].Tags {
		if tg.Valid {
			served = append(served, tg.Version.String())
		}
	}
	if len(served) != len(want) {
		t.Errorf("loaded %d valid versions %q, want %d", len(served), served, len(want))
	}
}
