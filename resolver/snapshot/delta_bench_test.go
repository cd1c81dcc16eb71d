package snapshot

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// BenchmarkApplyOneSource measures the in-memory half of a reload after one
// source changed, at the scale the performance goal names: 1,000 sources of
// 1,000 tags each (1 M tags) and a channel per source. "whole" rebuilds
// everything (what every change cost before Apply); "one-source" re-indexes
// the changed source and recomputes channel answers; "states" only the
// answers (a pin).
func BenchmarkApplyOneSource(b *testing.B) {
	const sources, tags = 1000, 1000
	p := mustParser(b, resolver.SchemeSemver, `k3s(\d+)`)
	names := benchK3sTags(tags)
	data := make([]catalog.SourceData, sources)
	channels := make([]catalog.Channel, sources)
	for i := range data {
		name := fmt.Sprintf("src-%04d", i)
		data[i] = sourceData(b, name, p, names)
		channels[i] = catalog.Channel{Name: name, Source: name, Stream: resolver.Released}
	}
	snap := New(channels, data, nil, testTime)
	changed := sourceData(b, "src-0500", p, names[:tags-1])
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			New(channels, data, nil, testTime)
		}
	})
	b.Run("one-source", func(b *testing.B) {
		for b.Loop() {
			snap.Apply(Delta{Sources: []catalog.SourceData{changed}}, testTime)
		}
	})
	b.Run("states", func(b *testing.B) {
		states := map[string]catalog.ChannelState{"src-0001": {Pin: "v1.10.3+k3s1", Revision: 2}}
		for b.Loop() {
			snap.Apply(Delta{States: states}, testTime)
		}
	})
}

// BenchmarkIndexSource indexes one source of 1,000 tags as a reload does,
// the tags in the order the store reads them (by name): k3s tags, and
// plain ones spelled like their versions (bench-scale's).
func BenchmarkIndexSource(b *testing.B) {
	plain := make([]string, 1000)
	for j := range plain {
		plain[j] = fmt.Sprintf("1.%d.%d", j/100, j%100)
	}
	for _, tc := range []struct {
		name  string
		build string
		tags  []string
	}{{"k3s", `k3s(\d+)`, benchK3sTags(1000)}, {"plain", "", plain}} {
		b.Run(tc.name, func(b *testing.B) {
			tags := slices.Clone(tc.tags)
			slices.Sort(tags)
			d := sourceData(b, "src", mustParser(b, resolver.SchemeSemver, tc.build), tags)
			for b.Loop() {
				indexSource(&d, testTime)
			}
		})
	}
}
