package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// Tag and source names compare byte by byte whatever the database's
// default collation (migrations/016): the primary key's comparisons skip
// the locale, and order by tag is Go's order. On an en-US database "a"
// sorts before "B"; byte order puts "B" first.
func TestTagsCompareByteByByteUnderALinguisticDefault(t *testing.T) {
	u := storetest.LinguisticURL(t)
	ctx := context.Background()
	st, err := store.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(query(t, u, `select 'a' < 'B'`)); got != "[[true]]" {
		t.Fatalf("the database's default collation puts 'a' < 'B' at %s; the test needs a linguistic one", got)
	}
	if err := st.SyncSources(ctx, []catalog.Source{source(t, "src")}); err != nil {
		t.Fatal(err)
	}
	names := []string{"a-1", "B-1", "_x", "b", "A", "1.0", "Z-1", "z"}
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags(names...)}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range query(t, u, `select tag from tags where source = 'src' order by tag`) {
		got = append(got, r[0].(string))
	}
	want := slices.Sorted(slices.Values(names))
	if !slices.Equal(got, want) {
		t.Errorf("order by tag = %q, want byte order %q", got, want)
	}
	for _, r := range query(t, u, `
		select c.relname || '.' || a.attname, coalesce(l.collname, '')
		from pg_attribute a join pg_class c on c.oid = a.attrelid left join pg_collation l on l.oid = a.attcollation
		where c.relname in ('tags', 'gate_checks') and a.attname in ('source', 'tag')`) {
		if r[1] != "C" {
			t.Errorf("%s is collated %q, want \"C\"", r[0], r[1])
		}
	}
}
