package store_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

func TestLoadReadsPresentTagsScansBlocksAndStates(t *testing.T) {
	st, u := newStore(t, "a", "b", "unused")
	ctx := context.Background()
	t0 := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	apply := func(r resolver.ScanResult) {
		t.Helper()
		if _, err := st.ApplyScan(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	apply(resolver.ScanResult{Source: "a", Started: t0, Finished: t0, Complete: true, Tags: tags("2.9.1", "2.9.2", "3.0.0")})
	apply(resolver.ScanResult{Source: "a", Started: t0.Add(time.Hour), Finished: t0.Add(time.Hour), Complete: true, Tags: tags("2.9.2", "3.0.0")})
	apply(resolver.ScanResult{Source: "a", Started: t0.Add(2 * time.Hour), Finished: t0.Add(2 * time.Hour), Err: errShort("boom")})
	apply(resolver.ScanResult{Source: "b", Started: t0, Finished: t0, Complete: true, Tags: tags("v1.0.0")})
	if err := st.SetDigests(ctx, "a", map[string]string{"3.0.0": "sha256:x"}); err != nil {
		t.Fatal(err)
	}
	query(t, u, `insert into blocks (source, version, reason, blocked_by, blocked_at) values ('a', '2.9.2', 'cve', 'ops', $1)`, t0)
	query(t, u, `insert into channel_state (channel, pin, pinned_by, pinned_at, revision, updated_at) values ('stable', '2.9.2', 'ops', $1, 3, $1), ('edge', '', '', null, 2, $1)`, t0)

	srcA, srcB := source(t, "a"), source(t, "b")
	data, states, err := st.Load(ctx, []catalog.Source{srcA, srcB})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 2 || data[0].Source.Name != "a" || data[1].Source.Name != "b" {
		t.Fatalf("Load sources = %+v, want a then b", data)
	}
	a := data[0]
	sort.Slice(a.Tags, func(i, j int) bool { return a.Tags[i].Name < a.Tags[j].Name })
	var names []string
	for _, tg := range a.Tags {
		if !tg.Present || !tg.FirstSeen.Equal(t0) || !tg.LastSeen.Equal(t0.Add(time.Hour)) {
			t.Errorf("tag %s: present %v first %v last %v", tg.Name, tg.Present, tg.FirstSeen, tg.LastSeen)
		}
		if want := srcA.Classify(tg.Name); tg.Valid != want.Valid || tg.Version != want.Version || tg.ParseError() != want.ParseError() {
			t.Errorf("tag %s not classified by the source's parser: %+v", tg.Name, tg)
		}
		names = append(names, tg.Name)
	}
	if diff := cmp.Diff([]string{"2.9.2", "3.0.0"}, names); diff != "" {
		t.Errorf("present tags of a (-want +got):\n%s", diff)
	}
	if a.Tags[1].Digest.String() != "sha256:x" {
		t.Errorf("digest of 3.0.0 = %q", a.Tags[1].Digest)
	}
	if a.LastScan == nil || a.LastScan.Outcome != "failed" || a.LastScan.Error != "boom" {
		t.Errorf("a.LastScan = %+v, want the failed one", a.LastScan)
	}
	if a.LastOK == nil || a.LastOK.Outcome != "ok" || !a.LastOK.Finished.Equal(t0.Add(time.Hour)) || a.LastOK.TagsGone != 1 {
		t.Errorf("a.LastOK = %+v, want the second scan", a.LastOK)
	}
	wantBlocks := []catalog.Block{{Source: "a", Version: "2.9.2", Reason: "cve", BlockedBy: "ops", BlockedAt: t0}}
	if diff := cmp.Diff(wantBlocks, a.Blocks, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })); diff != "" {
		t.Errorf("blocks (-want +got):\n%s", diff)
	}
	if b := data[1]; len(b.Tags) != 1 || b.LastScan == nil || b.LastOK == nil || b.LastScan.ID != b.LastOK.ID || b.Blocks != nil {
		t.Errorf("b = %+v", b)
	}
	wantStates := map[string]catalog.ChannelState{
		"stable": {Pin: "2.9.2", PinnedBy: "ops", PinnedAt: t0, Revision: 3, UpdatedAt: t0},
		"edge":   {Revision: 2, UpdatedAt: t0},
	}
	if diff := cmp.Diff(wantStates, states, cmp.Comparer(func(x, y time.Time) bool { return x.Equal(y) })); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

func TestLoadOfEmptyDatabase(t *testing.T) {
	st, _ := newStore(t, "a")
	data, states, err := st.Load(context.Background(), []catalog.Source{source(t, "a"), source(t, "never-synced")})
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 2 || data[0].Tags != nil || data[0].LastScan != nil || data[0].LastOK != nil || len(states) != 0 {
		t.Errorf("Load = %+v, %v; want two empty sources, no states", data, states)
	}
}

type errShort string

func (e errShort) Error() string { return string(e) }
