package snapshot

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestTheServedSet: a rollout channel pinned from v2.0.1 down to v2.0.0
// without rollback rolls v2.0.0 out while v2.0.1 is still served: the
// served set holds both, and every door's list (ServableWithin, the
// registry tags) reaches v2.0.1. Once the rollout is complete v2.0.1
// leaves the set, unless the fleet says active clusters were last
// answered it. A blocked version never counts.
func TestTheServedSet(t *testing.T) {
	p, _ := resolver.NewParser(resolver.SchemeSemver, "")
	src := catalog.Source{Name: "app", Parser: p}
	data := catalog.SourceData{Source: src}
	for _, n := range []string{"v1.9.0", "v2.0.0", "v2.0.1", "v2.1.0"} {
		tag := src.Classify(n)
		tag.Present = true
		data.Tags = append(data.Tags, tag)
	}
	ch := catalog.Channel{Name: "roll", Source: "app", Stream: resolver.Released, Rollout: &resolver.RolloutPolicy{Steps: []int{50, 100}, Interval: time.Hour}}
	start := time.Now()
	ro := &resolver.Rollout{ID: 2, Channel: "roll", From: "v2.0.1", To: "v2.0.0", Steps: []int{50, 100}, Interval: time.Hour, StartedAt: start}
	states := map[string]catalog.ChannelState{"roll": {Pin: "v2.0.0", Rollout: ro}}
	snap := New([]catalog.Channel{ch}, []catalog.SourceData{data}, states, start)
	names := func(tags []resolver.Tag) string {
		var s []string
		for _, t := range tags {
			s = append(s, t.Version.String())
		}
		return strings.Join(s, " ")
	}
	views := func(vs []resolver.VersionView) string {
		var s []string
		for _, v := range vs {
			s = append(s, v.Version.String())
		}
		return strings.Join(s, " ")
	}
	set, err := snap.ServedSet("roll", nil, start)
	if err != nil || names(set) != "v2.0.0 v2.0.1" {
		t.Fatalf("served set during the rollout: %q %v, want v2.0.0 v2.0.1", names(set), err)
	}
	if vs, _ := snap.ServableWithin("roll", nil, start); views(vs) != "v1.9.0 v2.0.0 v2.0.1" {
		t.Errorf("the doors' list during the rollout: %q, want up to v2.0.1", views(vs))
	}
	if tags, _ := snap.ChannelRegistryTags("roll", nil, start); len(tags) != 3 || tags[2].Name != "v2.0.1" {
		t.Errorf("registry tags during the rollout: %+v, want v1.9.0 v2.0.0 v2.0.1", tags)
	}
	done := start.Add(3 * time.Hour)
	if set, _ := snap.ServedSet("roll", nil, done); names(set) != "v2.0.0" {
		t.Errorf("served set once complete: %q, want v2.0.0 (the from left)", names(set))
	}
	if set, _ := snap.ServedSet("roll", []string{"v2.0.1", "v9.9.9"}, done); names(set) != "v2.0.0 v2.0.1" {
		t.Errorf("served set once complete, with active clusters last answered v2.0.1: %q", names(set))
	}
	data.Blocks = []catalog.Block{{Source: "app", Version: "v2.0.1"}}
	snap = New([]catalog.Channel{ch}, []catalog.SourceData{data}, states, start)
	if set, _ := snap.ServedSet("roll", []string{"v2.0.1"}, start); names(set) != "v2.0.0" {
		t.Errorf("a blocked version in the served set: %q", names(set))
	}
}
