package evidence

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// older orders "vN" strings by N, as a source's scheme would.
func older(_, a, b string) bool { return len(a) == 2 && len(b) == 2 && a < b }

func TestComputeCountsToldAdoptedStuckPerChannel(t *testing.T) {
	told := map[resolver.ChannelVersion]resolver.EvidenceTold{
		{Channel: "a", Version: "v2"}:   {First: t0, Last: t0.Add(time.Hour)},
		{Channel: "a", Version: "v3"}:   {First: t0.Add(time.Hour), Last: t0.Add(2 * time.Hour)},
		{Channel: "b", Version: "v2"}:   {First: t0, Last: t0},
		{Channel: "a", Version: "gone"}: {First: t0.Add(-60 * 24 * time.Hour), Last: t0.Add(-40 * 24 * time.Hour)},
	}
	rows := []resolver.EvidenceRow{
		{Channel: "a", Served: "v2", Reported: "v2", Old: true, Clusters: 6},
		{Channel: "a", Served: "v2", Reported: "v1", Old: true, Clusters: 3},  // stuck
		{Channel: "a", Served: "v2", Reported: "v1", Old: false, Clusters: 2}, // told recently: not stuck yet
		{Channel: "a", Served: "v2", Reported: "", Old: true, Clusters: 1},    // reports nothing: told, never stuck
		{Channel: "a", Served: "v2", Reported: "v9", Old: true, Clusters: 1},  // newer: not stuck
		{Channel: "a", Served: "v3", Reported: "v2", Old: false, Clusters: 4},
		{Channel: "b", Served: "v2", Reported: "v2", Old: true, Clusters: 5},
		{Channel: "a", Served: "v7", Reported: "v7", Old: true, Clusters: 9}, // never told by the records kept: left out
	}
	halts := map[resolver.ChannelVersion]int{{Channel: "a", Version: "v3"}: 2}
	p50 := map[resolver.ChannelVersion]float64{{Channel: "a", Version: "v2"}: 90}
	got := Compute(rows, told, halts, p50, older, t0.Add(-30*24*time.Hour))
	want := map[string][]Version{
		"a": {
			{Channel: "a", Version: "v2", Told: 13, Adopted: 6, Stuck: 3, FirstTold: t0, LastTold: t0.Add(time.Hour), AdoptionP50: 90},
			{Channel: "a", Version: "v3", Told: 4, Halts: 2, FirstTold: t0.Add(time.Hour), LastTold: t0.Add(2 * time.Hour), AdoptionP50: -1},
		},
		"b": {{Channel: "b", Version: "v2", Told: 5, Adopted: 5, FirstTold: t0, LastTold: t0, AdoptionP50: -1}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Compute (-want +got):\n%s", d)
	}
	if ev := Of(got["a"], "v5"); ev.Told != 0 || ev.AdoptionP50 != -1 || ev.Version != "v5" {
		t.Errorf("Of an absent version: %+v", ev)
	}
}

func TestReadySaysWhyEachConditionWaits(t *testing.T) {
	p := catalog.PromotePolicy{From: "candidate", Soak: 24 * time.Hour, MinAdopted: 20, MaxStuckRatio: 0.05}
	now := t0.Add(30 * time.Hour)
	for _, tc := range []struct {
		name string
		ev   Version
		ok   bool
		why  string
	}{
		{"never told", Version{Version: "v2"}, false, "v2 has not been told to any cluster of candidate yet"},
		{"halted", Version{Version: "v2", Told: 40, Adopted: 40, FirstTold: t0, Halts: 1}, false, "a rollout of v2 on candidate was halted"},
		{"soaking", Version{Version: "v2", Told: 40, Adopted: 40, FirstTold: now.Add(-21 * time.Hour)}, false, "soak 3h00m left"},
		{"soaking, minutes", Version{Version: "v2", Told: 40, Adopted: 40, FirstTold: now.Add(-24*time.Hour + 41*time.Minute + time.Second)}, false, "soak 42m left"},
		{"few adopted", Version{Version: "v2", Told: 40, Adopted: 12, FirstTold: t0}, false, "12 of 20 adopted"},
		{"stuck", Version{Version: "v2", Told: 100, Adopted: 90, Stuck: 8, FirstTold: t0}, false, "stuck 8% > 5%"},
		{"at the limit", Version{Version: "v2", Told: 100, Adopted: 20, Stuck: 5, FirstTold: t0.Add(6 * time.Hour)}, true, ""},
	} {
		ok, why := Ready(p, tc.ev, now)
		if ok != tc.ok || why != tc.why {
			t.Errorf("%s: Ready = %v %q, want %v %q", tc.name, ok, why, tc.ok, tc.why)
		}
	}
}
