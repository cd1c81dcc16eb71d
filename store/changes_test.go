package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

// TestListenChangesLeavesOutItsOwn: a replica hears what another replica
// changed, as the part that changed, and of what it changed itself only
// the store revision (it applied the change already), so one write costs
// each replica one rebuild; revisions grow in commit order.
func TestListenChangesLeavesOutItsOwn(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, u := newStore(t, "src")
	other, err := store.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	got := make(chan snapshot.Change, 100)
	done := make(chan error, 1)
	go func() { done <- st.ListenChanges(ctx, func(c snapshot.Change) { got <- c }) }()
	defer func() { cancel(); <-done }()
	want := func(w snapshot.Change) {
		t.Helper()
		select {
		case c := <-got:
			if diff := cmp.Diff(w, c); diff != "" {
				t.Fatalf("change (-want +got):\n%s", diff)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change within 10s, want %+v", w)
		}
	}
	want(snapshot.Change{All: true}) // listening: read everything once

	// Its own scan and block first: if they were delivered as changes,
	// they would fail the next checks.
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("1.0.0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Block(ctx, "src", "1.0.0", "me", "own"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Pin(ctx, resolver.ChannelChange{Channel: "ch", Version: "1.0.0", Actor: "them", IfRevision: resolver.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	want(snapshot.Change{Revision: 1})
	want(snapshot.Change{Revision: 2})
	want(snapshot.Change{Channel: "ch", Revision: 3})
	if err := other.Unblock(ctx, "src", "1.0.0", "them", "theirs"); err != nil {
		t.Fatal(err)
	}
	want(snapshot.Change{Source: "src", Revision: 4})
	if n, err := st.StoreRevision(ctx); err != nil || n != 4 {
		t.Errorf("store revision %d (%v), want 4", n, err)
	}
	select {
	case c := <-got:
		t.Fatalf("unexpected change %+v", c)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestLoadSourcesAndStatesMatchLoad: the partial reads return what the
// whole read returns for the same parts.
func TestLoadSourcesAndStatesMatchLoad(t *testing.T) {
	ctx := context.Background()
	st, _ := newStore(t, "a", "b")
	for _, src := range []string{"a", "b"} {
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: src, Complete: true, Tags: tags("1.0.0", "1.1.0")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Block(ctx, "b", "1.1.0", "me", "bad"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: "ch", Version: "1.0.0", Actor: "me", IfRevision: resolver.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	srcs := []catalog.Source{source(t, "a"), source(t, "b")}
	all, states, err := st.Load(ctx, srcs)
	if err != nil {
		t.Fatal(err)
	}
	part, err := st.LoadSources(ctx, srcs[1:])
	if err != nil {
		t.Fatal(err)
	}
	gotStates, err := st.LoadStates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Versions hold unexported fields that cmp cannot see; DeepEqual can.
	if !reflect.DeepEqual(all[1:], part) {
		t.Errorf("LoadSources(b) differs from Load's b:\nload    %+v\npartial %+v", all[1:], part)
	}
	if diff := cmp.Diff(states, gotStates); diff != "" {
		t.Errorf("LoadStates differs from Load's states (-load +partial):\n%s", diff)
	}
	if len(part) != 1 || len(part[0].Blocks) != 1 || len(part[0].Tags) != 2 {
		t.Errorf("LoadSources(b) = %+v, want b's two tags and its block", part)
	}
}
