package snapshot

import (
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// TestForcedExpiredMovesOneLineAtATime: on a channel with upgrade_expired,
// a cluster on an expired line is answered the newest version of the next
// line with a release (1.34 has only candidates), never above the
// channel's answer, held outside its windows and under a freeze; without
// the option, or on a supported line, the usual answer stands.
func TestForcedExpiredMovesOneLineAtATime(t *testing.T) {
	d := k3sData(t)
	ended := testTime.Add(-time.Hour)
	d.Source.Lifecycle = lifecycle.Policy{End: map[string]time.Time{"1.31": ended, "1.32": ended, "1.33": ended}}
	up := func(c catalog.Channel) catalog.Channel { c.UpgradeExpired = true; return c }
	closed := resolver.Window{Days: [7]bool{true, true, true, true, true, true, true}, Start: 10 * 60, End: 11 * 60, Location: time.UTC}
	channels := []catalog.Channel{
		up(catalog.Channel{Name: "up", Source: "k3s-upgrade", Stream: resolver.Released}),
		up(catalog.Channel{Name: "capped", Source: "k3s-upgrade", Stream: resolver.Released, Latest: "v1.32.5+k3s1"}),
		up(catalog.Channel{Name: "window", Source: "k3s-upgrade", Stream: resolver.Released, Windows: []resolver.Window{closed}}),
		up(catalog.Channel{Name: "frozen", Source: "k3s-upgrade", Stream: resolver.Released}),
		{Name: "plain", Source: "k3s-upgrade", Stream: resolver.Released},
	}
	states := map[string]catalog.ChannelState{"frozen": {Hold: &resolver.Hold{Version: "v1.35.1+k3s1", Reason: "holidays", Since: ended}}}
	s := New(channels, []catalog.SourceData{d}, states, testTime)
	for _, tc := range []struct {
		name, channel, reported, want, held, forced string
	}{
		{"1.31 goes to 1.32's newest", "up", "v1.31.9+k3s1", "v1.32.5+k3s1", "", ForcedExpired},
		{"1.32 goes to 1.33's newest", "up", "v1.32.4+k3s1", "v1.33.6+k3s2", "", ForcedExpired},
		{"1.33 skips 1.34, which has no release", "up", "v1.33.0+k3s1", "v1.35.1+k3s1", "", ForcedExpired},
		{"a supported line gets the usual answer", "up", "v1.35.1+k3s1", "v1.35.1+k3s1", "", ""},
		{"never above the channel's answer", "capped", "v1.31.9+k3s1", "v1.32.5+k3s1", "", ForcedExpired},
		{"no next line under the channel's answer: the usual answer", "capped", "v1.32.4+k3s1", "v1.32.5+k3s1", "", ""},
		{"outside its windows it stays", "window", "v1.31.9+k3s1", "v1.31.9+k3s1", HeldWindow, ""},
		{"under a freeze it stays", "frozen", "v1.31.9+k3s1", "v1.31.9+k3s1", HeldFreeze, ""},
		{"without upgrade_expired the usual answer", "plain", "v1.31.9+k3s1", "v1.35.1+k3s1", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := s.Reported(tc.channel, tc.reported)
			q := Asker{ID: "c1", Reported: r, HasReported: true, Now: testTime}
			d, err := s.ClusterAnswer(tc.channel, q)
			if err != nil {
				t.Fatal(err)
			}
			got, held := d.Tag, d.Held
			if d.Forced != tc.forced || d.Directed != (held == "") {
				t.Errorf("decision forced %q directed %v, want forced %q, directed unless held", d.Forced, d.Directed, tc.forced)
			}
			if got.Version.String() != tc.want || held != tc.held {
				t.Errorf("ClusterAnswer(%s, %s) = %s held %q, want %s held %q", tc.channel, tc.reported, got.Version, held, tc.want, tc.held)
			}
		})
	}
}

// TestADatePassingReclassifiesAndReanswers: Apply at a time past a line's
// end, with nothing else changed, classifies it expired and answers the
// source's channels again (what they say of their line is never stale);
// before the date the table and the answers are carried.
func TestADatePassingReclassifiesAndReanswers(t *testing.T) {
	d := k3sData(t)
	end := testTime.Add(time.Hour)
	d.Source.Lifecycle = lifecycle.Policy{End: map[string]time.Time{"1.35": end}}
	s := New([]catalog.Channel{{Name: "up", Source: "k3s-upgrade", Stream: resolver.Released}}, []catalog.SourceData{d}, nil, testTime)
	if next := s.Lines().Next()["k3s-upgrade"]; !next.Equal(end) {
		t.Fatalf("LifecycleNext %s, want %s", next, end)
	}
	line := func(s *Snapshot) lifecycle.Classification {
		l := s.lines.LineOf("k3s-upgrade", resolver.Version{Major: 1, Minor: 35})
		return l.Class
	}
	before := s.Apply(Delta{}, end.Add(-time.Minute))
	if line(before) != lifecycle.Supported || !before.SameAnswer(s, "up") {
		t.Errorf("before the end: %s, carried %v", line(before), before.SameAnswer(s, "up"))
	}
	after := before.Apply(Delta{}, end)
	if line(after) != lifecycle.Expired || after.SameAnswer(before, "up") {
		t.Errorf("at the end: %s, carried %v (want expired, answered again)", line(after), after.SameAnswer(before, "up"))
	}
	if ch := after.Lines().Changes(before.Lines())["k3s-upgrade"]; len(ch) != 1 || ch[0].Line != "1.35" {
		t.Errorf("changes %+v", ch)
	}
}
