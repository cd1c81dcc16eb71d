package notify

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/resolvertest"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

var testTime = time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)

func mustParser(t testing.TB, scheme resolver.Scheme, build string) *resolver.Parser {
	t.Helper()
	p, err := resolver.NewParser(scheme, build)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sourceData is name's tags as indexed, with blocked versions blocked.
func sourceData(t testing.TB, name string, p *resolver.Parser, tags []string, blocked ...string) catalog.SourceData {
	t.Helper()
	d := resolvertest.SourceData(catalog.Source{Name: name, Image: "registry.example/" + name, Parser: p}, tags, nil, testTime)
	for _, v := range blocked {
		d.Blocks = append(d.Blocks, catalog.Block{Source: name, Version: v, Reason: "bad " + v, BlockedBy: "test", BlockedAt: testTime})
	}
	return d
}

func TestServedChangesLeavesPinsToTheirOwnEvents(t *testing.T) {
	p := mustParser(t, resolver.SchemeSemver, `k3s(\d+)`)
	channels := []catalog.Channel{
		{Name: "latest", Source: "k3s", Stream: resolver.Released},
		{Name: "pinned", Source: "k3s", Stream: resolver.Released},
		{Name: "held", Source: "k3s", Stream: resolver.Released},
	}
	states := map[string]catalog.ChannelState{"held": {Pin: "v1.33.5+k3s1", Revision: 1}}
	before := snapshot.New(channels, []catalog.SourceData{sourceData(t, "k3s", p, []string{"v1.33.5-k3s1"})}, states, testTime)

	// v1.33.6 is indexed and "pinned" is pinned to it in the same change:
	// latest moved by indexing; pinned moved by its pin (recorded with the
	// pin); held stays where its pin holds it.
	states2 := map[string]catalog.ChannelState{"held": states["held"], "pinned": {Pin: "v1.33.6+k3s1", Revision: 1}}
	after := snapshot.New(channels, []catalog.SourceData{sourceData(t, "k3s", p, []string{"v1.33.5-k3s1", "v1.33.6-k3s1"})}, states2, testTime)
	want := []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "latest", Source: "k3s", From: "v1.33.5+k3s1", To: "v1.33.6+k3s1"}}
	if d := cmp.Diff(want, servedChanges(before, after)); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}

	// Blocking the newest moves the followers back.
	blocked := snapshot.New(channels, []catalog.SourceData{sourceData(t, "k3s", p, []string{"v1.33.5-k3s1", "v1.33.6-k3s1"}, "v1.33.6+k3s1")}, states2, testTime)
	got := servedChanges(after, blocked)
	if len(got) != 2 || got[0].Channel != "latest" || got[0].To != "v1.33.5+k3s1" || got[1].Channel != "pinned" || got[1].To != "" {
		t.Errorf("after a block: %+v, want latest back to v1.33.5+k3s1 and pinned to nothing", got)
	}
	if servedChanges(nil, after) != nil {
		t.Error("the first snapshot reports changes")
	}
}

// A new leader compares its snapshot with what the outbox last announced:
// moves made while nobody led are announced once, and nothing else.
func TestServedSinceBringsTheAnnouncedUpToDate(t *testing.T) {
	p := mustParser(t, resolver.SchemeSemver, `k3s(\d+)`)
	channels := []catalog.Channel{
		{Name: "latest", Source: "k3s", Stream: resolver.Released},
		{Name: "announced", Source: "k3s", Stream: resolver.Released},
		{Name: "empty", Source: "k3s", Stream: resolver.Released, Constraint: testutil.Constraint(t, ">= 2.0"), ConstraintText: ">= 2.0"},
	}
	snap := snapshot.New(channels, []catalog.SourceData{sourceData(t, "k3s", p, []string{"v1.33.5-k3s1", "v1.33.6-k3s1"})}, nil, testTime)
	recorded := map[string]string{"announced": "v1.33.6+k3s1", "empty": ""}
	want := []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "latest", Source: "k3s", From: "", To: "v1.33.6+k3s1"}}
	if d := cmp.Diff(want, servedSince(recorded, snap)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	recorded["latest"] = "v1.33.5+k3s1"
	want[0].From = "v1.33.5+k3s1"
	if d := cmp.Diff(want, servedSince(recorded, snap)); d != "" {
		t.Errorf("after an older announcement (-want +got):\n%s", d)
	}
}

// TestServedChangesAfterAReloadOfOneSource: after Apply re-indexed one
// source, the channels it carried are skipped without being compared and
// the re-indexed source's channel that moved is reported.
func TestServedChangesAfterAReloadOfOneSource(t *testing.T) {
	p := mustParser(t, resolver.SchemeSemver, `k3s(\d+)`)
	channels := []catalog.Channel{
		{Name: "a", Source: "a", Stream: resolver.Released},
		{Name: "b", Source: "b", Stream: resolver.Released},
		{Name: "b-too", Source: "b", Stream: resolver.Released},
	}
	before := snapshot.New(channels, []catalog.SourceData{
		sourceData(t, "a", p, []string{"v1.33.5-k3s1"}), sourceData(t, "b", p, []string{"v1.33.5-k3s1"}),
	}, nil, testTime)
	after := before.Apply(snapshot.Delta{Sources: []catalog.SourceData{sourceData(t, "b", p, []string{"v1.33.5-k3s1", "v1.33.6-k3s1"})}}, testTime)
	want := []resolver.Event{
		{Type: resolver.EventChannelChanged, Channel: "b", Source: "b", From: "v1.33.5+k3s1", To: "v1.33.6+k3s1"},
		{Type: resolver.EventChannelChanged, Channel: "b-too", Source: "b", From: "v1.33.5+k3s1", To: "v1.33.6+k3s1"},
	}
	if d := cmp.Diff(want, servedChanges(before, after)); d != "" {
		t.Errorf("changes (-want +got):\n%s", d)
	}
	if got := servedChanges(after, after.Apply(snapshot.Delta{States: map[string]catalog.ChannelState{}}, testTime)); len(got) != 0 {
		t.Errorf("a reload that changed nothing served: %+v", got)
	}
}
