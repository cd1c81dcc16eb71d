package indexdb

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// job is a queued listing of n tags (their contents do not matter here).
func job(source string, n int) *listingJob {
	return &listingJob{source: source, tags: make([]resolver.Tag, n)}
}

// groupsOf drains a queue of jobs into the groups next takes, as source names.
func groupsOf(t *testing.T, jobs ...*listingJob) [][]string {
	t.Helper()
	g := &listingGroups{pending: jobs, running: true}
	var out [][]string
	for group := g.next(); group != nil; group = g.next() {
		var names []string
		for _, j := range group {
			names = append(names, j.source)
		}
		out = append(out, names)
	}
	if g.running || len(g.pending) != 0 {
		t.Fatalf("next left the queue running (%v) or holding %d listings", g.running, len(g.pending))
	}
	return out
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func TestGroupsStopAtTheirLimits(t *testing.T) {
	many := func(n int) []*listingJob {
		var jobs []*listingJob
		for _, name := range names("s", n) {
			jobs = append(jobs, job(name, 1))
		}
		return jobs
	}
	tests := []struct {
		name string
		jobs []*listingJob
		want [][]string
	}{
		{"sources at the limit", many(maxGroupSources), [][]string{names("s", maxGroupSources)}},
		{"sources past it", many(maxGroupSources + 1), [][]string{names("s", maxGroupSources), {fmt.Sprintf("s%02d", maxGroupSources)}}},
		{"tags at the limit", []*listingJob{job("a", maxGroupTags-1), job("b", 1)}, [][]string{{"a", "b"}}},
		{"tags past it", []*listingJob{job("a", maxGroupTags-1), job("b", 2), job("c", 1)}, [][]string{{"a", "c"}, {"b"}}},
		{"a listing larger than a group goes alone", []*listingJob{job("big", maxGroupTags+1), job("a", 1)}, [][]string{{"big"}, {"a"}}},
		{"one listing a source a group, in arrival order", []*listingJob{job("a", 1), job("b", 1), job("a", 2), job("a", 3)},
			[][]string{{"a", "b"}, {"a"}, {"a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := groupsOf(t, tt.jobs...); !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("groups %v, want %v", got, tt.want)
			}
		})
	}
	// The second "a" keeps its place before the third one.
	jobs := []*listingJob{job("a", 1), job("a", 2), job("a", 3)}
	g := &listingGroups{pending: jobs, running: true}
	for _, want := range jobs {
		if got := g.next(); len(got) != 1 || got[0] != want {
			t.Fatalf("next = %v, want the listings of a in arrival order", got)
		}
	}
}
