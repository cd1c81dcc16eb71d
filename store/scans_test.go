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

// tagState is what the tags table says about one tag.
type tagState struct {
	Present   bool
	FirstSeen int // index of the scan that first saw it
}

func TestApplyScan(t *testing.T) {
	type step struct {
		tags     []string
		complete bool
		err      error
		want     catalog.Scan // only the counts and outcome are compared
	}
	tests := []struct {
		name  string
		steps []step
		want  map[string]tagState
	}{
		{
			name: "first scan adds every tag",
			steps: []step{
				{tags: []string{"1.0.0", "1.1.0", "latest"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 3, TagsNew: 3}},
			},
			want: map[string]tagState{"1.0.0": {true, 0}, "1.1.0": {true, 0}, "latest": {true, 0}},
		},
		{
			name: "complete rescan marks missing tags absent and keeps them",
			steps: []step{
				{tags: []string{"1.0.0", "1.1.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 2, TagsNew: 2}},
				{tags: []string{"1.1.0", "1.2.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 2, TagsNew: 1, TagsGone: 1}},
			},
			want: map[string]tagState{"1.0.0": {false, 0}, "1.1.0": {true, 0}, "1.2.0": {true, 1}},
		},
		{
			name: "partial scan adds what it saw and marks nothing absent",
			steps: []step{
				{tags: []string{"1.0.0", "1.1.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 2, TagsNew: 2}},
				{tags: []string{"1.2.0"}, complete: false, want: catalog.Scan{Outcome: "ok", TagsSeen: 1, TagsNew: 1}},
			},
			want: map[string]tagState{"1.0.0": {true, 0}, "1.1.0": {true, 0}, "1.2.0": {true, 1}},
		},
		{
			name: "tag absent then back is present with first_seen kept",
			steps: []step{
				{tags: []string{"1.0.0", "1.1.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 2, TagsNew: 2}},
				{tags: []string{"1.1.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 1, TagsGone: 1}},
				{tags: []string{"1.0.0", "1.1.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 2}},
			},
			want: map[string]tagState{"1.0.0": {true, 0}, "1.1.0": {true, 0}},
		},
		{
			name: "failed scan records its error and touches no tag",
			steps: []step{
				{tags: []string{"1.0.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 1, TagsNew: 1}},
				{tags: []string{"2.0.0"}, err: errors.New("registry said 500\nretry later"), want: catalog.Scan{Outcome: "failed", Error: "registry said 500 retry later"}},
			},
			want: map[string]tagState{"1.0.0": {true, 0}},
		},
		{
			name: "duplicate tags in a listing count once",
			steps: []step{
				{tags: []string{"1.0.0", "1.0.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 1, TagsNew: 1}},
			},
			want: map[string]tagState{"1.0.0": {true, 0}},
		},
		{
			name: "empty complete listing marks everything absent",
			steps: []step{
				{tags: []string{"1.0.0"}, complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsSeen: 1, TagsNew: 1}},
				{complete: true, want: catalog.Scan{Outcome: "ok", Complete: true, TagsGone: 1}},
			},
			want: map[string]tagState{"1.0.0": {false, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, u := newStore(t, "src")
			ctx := context.Background()
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			seenAt := map[time.Time]int{}
			var lastID int64
			for i, s := range tt.steps {
				at := base.Add(time.Duration(i) * time.Hour)
				seenAt[at] = i
				got, err := st.ApplyScan(ctx, resolver.ScanResult{
					Source: "src", Started: at.Add(-time.Minute), Finished: at,
					Complete: s.complete, Tags: tags(s.tags...), Err: s.err, Requests: 2,
				})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got.ID <= lastID {
					t.Errorf("step %d: scan id %d not after %d", i, got.ID, lastID)
				}
				lastID = got.ID
				s.want.Source, s.want.Requests = "src", 2
				s.want.ID, s.want.Started, s.want.Finished = got.ID, got.Started, got.Finished
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("step %d: scan (-want +got):\n%s", i, diff)
				}
			}
			rows := query(t, u, `select tag, present, first_seen from tags where source = 'src'`)
			gotTags := map[string]tagState{}
			for _, r := range rows {
				gotTags[r[0].(string)] = tagState{r[1].(bool), seenAt[r[2].(time.Time).UTC()]}
			}
			if diff := cmp.Diff(tt.want, gotTags); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
			n := query(t, u, `select count(*) from scans`)[0][0].(int64)
			if int(n) != len(tt.steps) {
				t.Errorf("scans rows = %d, want %d", n, len(tt.steps))
			}
		})
	}
}

func TestApplyScanRefusesBadInput(t *testing.T) {
	st, _ := newStore(t, "src")
	for _, tt := range []struct {
		name string
		r    resolver.ScanResult
		want error
	}{
		{"no source is invalid", resolver.ScanResult{}, resolver.ErrInvalid},
		{"unsynced source is not found", resolver.ScanResult{Source: "nope", Tags: tags("1.0.0")}, resolver.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := st.ApplyScan(context.Background(), tt.r)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			t.Log(err)
		})
	}
}

func TestSetDigestsRecordsRetag(t *testing.T) {
	st, u := newStore(t, "src")
	ctx := context.Background()
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("a", "b", "c")}); err != nil {
		t.Fatal(err)
	}
	missing := func() []string {
		got, err := st.TagsWithoutDigest(ctx, "src")
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		return got
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, missing()); diff != "" {
		t.Errorf("before: (-want +got):\n%s", diff)
	}
	if err := st.SetDigests(ctx, "src", map[string]string{"a": "sha256:1", "b": "sha256:2", "gone": "sha256:9", "c": ""}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c"}, missing()); diff != "" {
		t.Errorf("after: (-want +got):\n%s", diff)
	}
	// a is re-tagged; b is unchanged.
	if err := st.SetDigests(ctx, "src", map[string]string{"a": "sha256:3", "b": "sha256:2"}); err != nil {
		t.Fatal(err)
	}
	rows := query(t, u, `select tag, digest, previous_digest, retagged_at is not null from tags where tag in ('a','b') order by tag`)
	want := [][]any{{"a", "sha256:3", "sha256:1", true}, {"b", "sha256:2", "", false}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("digests (-want +got):\n%s", diff)
	}
}

func TestAddScanRequestsCountsDigestRequests(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	sc, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("a"), Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{5, 0, 1} {
		if err := st.AddScanRequests(ctx, sc.ID, n); err != nil {
			t.Fatalf("add %d: %v", n, err)
		}
	}
	data, _, err := st.Load(ctx, []catalog.Source{source(t, "src")})
	if err != nil {
		t.Fatal(err)
	}
	if got := data[0].LastScan.Requests; got != 9 {
		t.Errorf("scan requests = %d, want 3 + 5 + 0 + 1 = 9", got)
	}
	for _, tt := range []struct {
		name string
		id   int64
		n    int
		want error
	}{
		{"unknown scan is not found", sc.ID + 100, 1, resolver.ErrNotFound},
		{"negative count is invalid", sc.ID, -1, resolver.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := st.AddScanRequests(ctx, tt.id, tt.n); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
