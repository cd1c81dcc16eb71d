package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// benchTags is n classified tags shaped like a busy juju source: releases,
// betas, rcs and build-numbered development builds.
func benchTags(b *testing.B, src catalog.Source, n int) []resolver.Tag {
	b.Helper()
	out := make([]resolver.Tag, 0, n)
	for i := 0; len(out) < n; i++ {
		var name string
		switch i % 4 {
		case 0:
			name = fmt.Sprintf("%d.%d.%d", 2+i/40000, i/400%100, i%400)
		case 1:
			name = fmt.Sprintf("%d.%d-beta%d", 2+i/40000, i/400%100, i%400)
		case 2:
			name = fmt.Sprintf("%d.%d-rc%d", 2+i/40000, i/400%100, i%400)
		default:
			name = fmt.Sprintf("%d.%d.%d.%d", 2+i/40000, i/400%100, i%400, 1+i%7)
		}
		out = append(out, src.Classify(name))
	}
	return out
}

// BenchmarkApplyScan10k: a first scan of 10,000 new tags; a rescan that
// finds the same 10,000 (the steady state: the fingerprint fast path); and a
// rescan in which one tag went or came back (the merge, writing one row).
// Goal: each under 0.3 s; the no-change rescan a few ms.
func BenchmarkApplyScan10k(b *testing.B) {
	ctx := context.Background()
	st, _ := newStore(b)
	base := source(b, "bench")
	ts := benchTags(b, base, 10_000)
	i := 0 // across runs: -count repeats a sub-benchmark on the same database
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			src := source(b, fmt.Sprintf("first-%d", i))
			i++
			if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			sc, err := st.ApplyScan(ctx, resolver.ScanResult{Source: src.Name, Complete: true, Tags: ts})
			if err != nil || sc.TagsNew != len(ts) {
				b.Fatalf("scan %+v, %v", sc, err)
			}
		}
	})
	b.Run("rescan", func(b *testing.B) {
		if err := st.SyncSources(ctx, []catalog.Source{base}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: base.Name, Complete: true, Tags: ts}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			sc, err := st.ApplyScan(ctx, resolver.ScanResult{Source: base.Name, Complete: true, Tags: ts, Finished: time.Now()})
			if err != nil || sc.TagsNew != 0 || sc.TagsGone != 0 {
				b.Fatalf("scan %+v, %v", sc, err)
			}
		}
	})
	b.Run("rescan-one-changed", func(b *testing.B) {
		i := 0
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: base.Name, Complete: true, Tags: ts}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			// Even runs lose the first tag, odd ones bring it back (an
			// update of an absent row: neither new nor gone).
			listing, gone := ts, 0
			if i%2 == 0 {
				listing, gone = ts[1:], 1
			}
			i++
			sc, err := st.ApplyScan(ctx, resolver.ScanResult{Source: base.Name, Complete: true, Tags: listing, Finished: time.Now()})
			if err != nil || sc.TagsNew != 0 || sc.TagsGone != gone {
				b.Fatalf("scan %+v, %v", sc, err)
			}
		}
	})
}

// BenchmarkLoad100k: Load of 100,000 present tags (plus 10,000 absent ones
// it must skip), re-parsed by the source's parser. Goal: under 1 s.
func BenchmarkLoad100k(b *testing.B) {
	ctx := context.Background()
	st, _ := newStore(b)
	var srcs []catalog.Source
	for i := 0; i < 4; i++ {
		srcs = append(srcs, source(b, fmt.Sprintf("load-%d", i)))
	}
	if err := st.SyncSources(ctx, srcs); err != nil {
		b.Fatal(err)
	}
	for _, src := range srcs {
		ts := benchTags(b, src, 27_500)
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: src.Name, Complete: true, Tags: ts}); err != nil {
			b.Fatal(err)
		}
		// 2,500 of them gone again, so Load has absent rows to skip.
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: src.Name, Complete: true, Tags: ts[:25_000]}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		data, _, err := st.Load(ctx, srcs)
		if err != nil {
			b.Fatal(err)
		}
		n, valid := 0, 0
		for _, d := range data {
			n += len(d.Tags)
			for _, t := range d.Tags {
				if t.Valid {
					valid++
				}
			}
		}
		if n != 100_000 || valid < 90_000 {
			b.Fatalf("loaded %d tags (%d valid), want 100000 mostly valid", n, valid)
		}
	}
}

// BenchmarkLoadStates is the read every replica makes after a pin, a hold
// or a rollout step anywhere: 100 pinned channels, 10 held, 10 with a
// rollout and its events.
func BenchmarkLoadStates(b *testing.B) {
	ctx := context.Background()
	st, _ := newStore(b, "src")
	for i := range 100 {
		if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: fmt.Sprintf("pinned-%03d", i), Version: "1.0.0", Actor: "bench", IfRevision: resolver.AnyRevision}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 10 {
		if err := st.BeginHold(ctx, fmt.Sprintf("held-%02d", i), resolver.Hold{Version: "1.0.0", Reason: "freeze"}); err != nil {
			b.Fatal(err)
		}
		ch := fmt.Sprintf("rolling-%02d", i)
		if ok, err := st.StartRollout(ctx, snapshot.RolloutStart{Channel: ch, Served: "1.0.0", To: "1.0.0", Policy: testPolicy, Baseline: true}); err != nil || !ok {
			b.Fatalf("baseline: %v %v", ok, err)
		}
		base := latestOf(b, st, ch)
		if ok, err := st.StartRollout(ctx, snapshot.RolloutStart{Channel: ch, Prev: base.ID, Served: "1.0.0", To: "1.1.0", Policy: testPolicy}); err != nil || !ok {
			b.Fatalf("rollout: %v %v", ok, err)
		}
		if _, err := st.RolloutControl(ctx, ch, "pause", "bench", "look"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		states, err := st.LoadStates(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(states) != 120 {
			b.Fatalf("%d states, want 120", len(states))
		}
	}
}
