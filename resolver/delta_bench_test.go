package resolver

import (
	"fmt"
	"testing"
)

// BenchmarkApplyOneSource measures the in-memory half of a reload after one
// source changed, at the scale the performance goal names: 1,000 sources of
// 1,000 tags each (1 M tags) and a channel per source. "whole" rebuilds
// everything (what every change cost before Apply); "one-source" re-indexes
// the changed source and recomputes channel answers; "states" only the
// answers (a pin).
func BenchmarkApplyOneSource(b *testing.B) {
	const sources, tags = 1000, 1000
	p := mustParser(b, SchemeSemver, `k3s(\d+)`)
	names := benchK3sTags(tags)
	data := make([]SourceData, sources)
	channels := make([]Channel, sources)
	for i := range data {
		name := fmt.Sprintf("src-%04d", i)
		data[i] = sourceData(b, name, p, names)
		channels[i] = Channel{Name: name, Source: name, Stream: Released}
	}
	snap := NewSnapshot(channels, data, nil, testTime)
	changed := sourceData(b, "src-0500", p, names[:tags-1])
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			NewSnapshot(channels, data, nil, testTime)
		}
	})
	b.Run("one-source", func(b *testing.B) {
		for b.Loop() {
			snap.Apply(Delta{Sources: []SourceData{changed}}, testTime)
		}
	})
	b.Run("states", func(b *testing.B) {
		states := map[string]ChannelState{"src-0001": {Pin: "v1.10.3+k3s1", Revision: 2}}
		for b.Loop() {
			snap.Apply(Delta{States: states}, testTime)
		}
	})
}
