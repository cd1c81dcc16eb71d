package snapshot

import (
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestABlockedClusterIsNeverSteeredAboveTheChannel: a cluster on a blocked
// version above its channel's answer is steered only up to the newest of
// the channel's served set (its fleet part included); with nothing there
// it stays, held as blocked, on plain and stepwise channels alike.
func TestABlockedClusterIsNeverSteeredAboveTheChannel(t *testing.T) {
	plain := catalog.Channel{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released}
	steps := catalog.Channel{Name: "steps", Source: "k3s-upgrade", Stream: resolver.Released, Stepwise: true}
	pins := map[string]catalog.ChannelState{"stable": {Pin: "v1.32.4+k3s1", Revision: 1}, "steps": {Pin: "v1.32.4+k3s1", Revision: 1}}
	s := New([]catalog.Channel{plain, steps}, []catalog.SourceData{k3sData(t, "v1.32.5+k3s1")}, pins, testTime)
	blocked := reported(t, s, "v1.32.5+k3s1")
	for _, tc := range []struct {
		name, channel string
		active        []string
		want, held    string
		directed      bool
	}{
		{"alone on the pin it stays, held", "stable", nil, "v1.32.5+k3s1", HeldBlocked, false},
		{"a version the fleet was directed to bounds it", "stable", []string{"v1.33.5+k3s1"}, "v1.33.5+k3s1", "", true},
		{"a stepwise channel holds it below its destination", "steps", []string{"v1.35.1+k3s1"}, "v1.32.5+k3s1", HeldBlocked, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := s.ClusterAnswer(tc.channel, Asker{ID: "c1", Reported: blocked, HasReported: true, Now: testTime, Active: tc.active})
			if err != nil || d.Tag.Version.String() != tc.want || d.Held != tc.held || d.Directed != tc.directed {
				t.Errorf("answer %s held %q directed %v (%v), want %s held %q directed %v",
					d.Tag.Version, d.Held, d.Directed, err, tc.want, tc.held, tc.directed)
			}
		})
	}
}

// TestOnlyTheRuleDirects: an answer the channel's rule chose is directed,
// even when it equals the reported version; a version echoed back so the
// cluster is not moved down, or while it settles, is a stay.
func TestOnlyTheRuleDirects(t *testing.T) {
	plain := catalog.Channel{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released}
	steps := catalog.Channel{Name: "steps", Source: "k3s-upgrade", Stream: resolver.Released, Stepwise: true, Settle: time.Hour}
	pins := map[string]catalog.ChannelState{"stable": {Pin: "v1.33.5+k3s1", Revision: 1}}
	s := New([]catalog.Channel{plain, steps}, []catalog.SourceData{k3sData(t)}, pins, testTime)
	for _, tc := range []struct {
		name, channel, reported string
		since                   time.Duration
		want                    string
		directed                bool
	}{
		{"older: the channel's answer", "stable", "v1.32.4+k3s1", 0, "v1.33.5+k3s1", true},
		{"the answer itself is directed too", "stable", "v1.33.5+k3s1", 0, "v1.33.5+k3s1", true},
		{"newer: a stay", "stable", "v1.35.1+k3s1", 0, "v1.35.1+k3s1", false},
		{"settling: a stay", "steps", "v1.32.4+k3s1", time.Minute, "v1.32.4+k3s1", false},
		{"settled: the step is directed", "steps", "v1.32.4+k3s1", 2 * time.Hour, "v1.33.6+k3s2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := s.ClusterAnswer(tc.channel, Asker{ID: "c1", Reported: reported(t, s, tc.reported), HasReported: true,
				Now: testTime, Since: testTime.Add(-tc.since)})
			if err != nil || d.Tag.Version.String() != tc.want || d.Directed != tc.directed {
				t.Errorf("answer %s directed %v (%v), want %s directed %v", d.Tag.Version, d.Directed, err, tc.want, tc.directed)
			}
		})
	}
}
