package fleet

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
)

func newTestRecorder(t testing.TB) *Recorder {
	t.Helper()
	r, err := New(Options{ActiveWindow: time.Hour}, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSettleClocks: a cluster's clock starts at its first sighting of a
// version and keeps that start while it reports the version; another
// version, or the same cluster on another channel, has its own clock; the
// database's earlier reported_since is adopted (a later one is not), and
// the sweep forgets clocks not seen within the active window.
func TestSettleClocks(t *testing.T) {
	ctx := context.Background()
	r := newTestRecorder(t)
	t0 := time.Unix(1_800_000_000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	check := func(what string, got, want time.Time) {
		t.Helper()
		if !got.Equal(want) {
			t.Errorf("%s: since %s, want %s", what, got.Sub(t0), want.Sub(t0))
		}
	}
	check("first sighting", r.Since(ctx, "stable", "a", "1.2.3", at(0)), at(0))
	check("same version later", r.Since(ctx, "stable", "a", "1.2.3", at(time.Minute)), at(0))
	check("another channel", r.Since(ctx, "edge", "a", "1.2.3", at(2*time.Minute)), at(2*time.Minute))
	check("a cluster whose ID extends another's", r.Since(ctx, "stable", "a\x00edge", "1.2.3", at(3*time.Minute)), at(3*time.Minute))
	check("the first channel kept its clock", r.Since(ctx, "stable", "a", "1.2.3", at(4*time.Minute)), at(0))
	check("a new version starts again", r.Since(ctx, "stable", "a", "1.2.4", at(5*time.Minute)), at(5*time.Minute))
	check("and keeps its start", r.Since(ctx, "stable", "a", "1.2.4", at(6*time.Minute)), at(5*time.Minute))

	r.adopt([]resolver.ClusterRecord{
		{Channel: "stable", ID: "a", Reported: "1.2.4", ReportedSince: at(-time.Hour)},         // earlier: adopted
		{Channel: "edge", ID: "a", Reported: "1.2.3", ReportedSince: at(time.Hour)},            // later: not
		{Channel: "stable", ID: "b", Reported: "1.2.3", ReportedSince: at(-2 * time.Hour)},     // no clock here: none made
		{Channel: "stable", ID: "a\x00edge", Reported: "9.9.9", ReportedSince: at(-time.Hour)}, // another version: not
	})
	check("adopted the database's start", r.Since(ctx, "stable", "a", "1.2.4", at(7*time.Minute)), at(-time.Hour))
	check("kept its own earlier start", r.Since(ctx, "edge", "a", "1.2.3", at(7*time.Minute)), at(2*time.Minute))
	check("adopt made no clock", r.Since(ctx, "stable", "b", "1.2.3", at(7*time.Minute)), at(7*time.Minute))
	check("adopt ignored another version", r.Since(ctx, "stable", "a\x00edge", "1.2.3", at(7*time.Minute)), at(3*time.Minute))

	// Seen at 7m: swept once the window has passed since, not before.
	r.sweep(at(7*time.Minute + time.Hour - time.Second))
	if n := r.settle.len(); n != 4 {
		t.Fatalf("%d clocks before the window passed, want 4", n)
	}
	r.Since(ctx, "stable", "b", "1.2.3", at(30*time.Minute)) // seen again: kept
	r.sweep(at(7*time.Minute + time.Hour + time.Second))
	if n := r.settle.len(); n != 1 {
		t.Fatalf("%d clocks after the sweep, want 1 (the one seen since)", n)
	}
	check("a swept clock starts again", r.Since(ctx, "stable", "a", "1.2.4", at(2*time.Hour)), at(2*time.Hour))
}

// BenchmarkSince is a settle-clock lookup among 200,000 clusters, each
// asked in turn as a fleet polling a stepwise channel asks.
func BenchmarkSince(b *testing.B) {
	ctx := context.Background()
	const clusters = 200_000
	r := newTestRecorder(b)
	ids := make([]string, clusters)
	for i := range ids {
		ids[i] = "bench-cluster-" + strconv.Itoa(i)
	}
	now := time.Now()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, id := range ids {
		r.Since(ctx, "stepwise", id, "v1.31.2-k3s1", now)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		r.Since(ctx, "stepwise", ids[(i*7919)%clusters], "v1.31.2-k3s1", now)
	}
	// After the loop: b.Loop's first call resets reported metrics.
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/clusters, "heap-B/clock")
}
