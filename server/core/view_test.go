package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/resolvertest"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestReloadOfOneSourceKeepsTheRest checks that after a reload of one
// source the view keeps every other channel's entry (the same pointer, not
// rebuilt) and the metrics keep every other source's series, while the
// changed source's channel and series show its new data, and a source
// gone from the snapshot loses its series.
// loadedAt and scanned fix the test's timestamps.
var (
	loadedAt = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	scanned  = time.Date(2026, 5, 1, 11, 59, 0, 0, time.UTC)
)

func TestReloadOfOneSourceKeepsTheRest(t *testing.T) {
	a := resolvertest.SemverSource(t, "a", "registry.example/a")
	b := resolvertest.SemverSource(t, "b", "registry.example/b")
	channels := []catalog.Channel{
		{Name: "a", Source: "a", Stream: resolver.Released},
		{Name: "b", Source: "b", Stream: resolver.Released},
	}
	first := snapshot.New(channels, []catalog.SourceData{
		resolvertest.SourceData(a, []string{"v1.0.0"}, nil, scanned), resolvertest.SourceData(b, []string{"v2.0.0"}, nil, scanned),
	}, nil, loadedAt)
	bNew := resolvertest.SourceData(b, []string{"v2.0.0", "v2.1.0"}, nil, scanned)
	bNew.LastOK.Finished = scanned.Add(time.Hour)
	second := first.Apply(snapshot.Delta{Sources: []catalog.SourceData{bNew}}, loadedAt.Add(time.Hour))

	v1 := newView(first, nil, "", nil, nil)
	v2 := newView(second, v1, "", nil, nil)
	if v2.entry("a") != v1.entry("a") {
		t.Error("channel a's entry was rebuilt; want it kept, its source did not change")
	}
	if v2.entry("b") == v1.entry("b") || v2.entry("b").Version != "v2.1.0" {
		t.Errorf("channel b serves %q from a kept entry; want a new entry serving v2.1.0", v2.entry("b").Version)
	}
	if len(v2.List) != 2 || v2.List[0] != v2.entry("a") || v2.List[1] != v2.entry("b") {
		t.Error("the view's list is not its channels in configuration order")
	}

	m, err := newMetrics(prometheus.NewRegistry(), func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	m.observeSnapshot(nil, first)
	m.lastSuccess.WithLabelValues("a").Set(42) // a kept series keeps even this
	m.observeSnapshot(first, second)
	got := gaugeSources(t, m.lastSuccess)
	if got["a"] != 42 {
		t.Errorf("source a's series was set again (%v); want it untouched", got["a"])
	}
	if want := float64(bNew.LastOK.Finished.Unix()); got["b"] != want {
		t.Errorf("source b's last success = %v, want %v", got["b"], want)
	}
	onlyA := snapshot.New(channels[:1], []catalog.SourceData{resolvertest.SourceData(a, []string{"v1.0.0"}, nil, scanned)}, nil, loadedAt)
	m.observeSnapshot(second, onlyA)
	if got := gaugeSources(t, m.lastSuccess); len(got) != 1 || got["a"] != float64(scanned.Add(2*time.Second).Unix()) {
		t.Errorf("last-success series after source b was removed: %v, want a's alone, set again", got)
	}
}

// gaugeSources reads every series of g by its source label.
func gaugeSources(t *testing.T, g *prometheus.GaugeVec) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 16)
	g.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		out[d.GetLabel()[0].GetValue()] = d.GetGauge().GetValue()
	}
	return out
}

// BenchmarkSwap is what every replica does after each reload besides
// building the snapshot: the view (entries kept for carried answers) and
// the per-source metrics, at 1,000 sources with a channel each, one
// source changed.
func BenchmarkSwap(b *testing.B) {
	const n = 1000
	var (
		channels = make([]catalog.Channel, n)
		data     = make([]catalog.SourceData, n)
	)
	for i := range n {
		name := fmt.Sprintf("src-%04d", i)
		src := resolvertest.SemverSource(b, name, "registry.example/"+name)
		channels[i] = catalog.Channel{Name: name, Source: name, Stream: resolver.Released}
		data[i] = resolvertest.SourceData(src, []string{"v1.0.0", "v1.1.0", "v1.2.0"}, nil, scanned)
	}
	first := snapshot.New(channels, data, nil, loadedAt)
	changed := resolvertest.SourceData(resolvertest.SemverSource(b, "src-0500", "registry.example/src-0500"), []string{"v1.0.0", "v1.3.0"}, nil, scanned)
	second := first.Apply(snapshot.Delta{Sources: []catalog.SourceData{changed}}, loadedAt.Add(time.Second))
	m, err := newMetrics(prometheus.NewRegistry(), func() float64 { return 0 })
	if err != nil {
		b.Fatal(err)
	}
	v1 := newView(first, nil, "", nil, nil)
	m.observeSnapshot(nil, first)
	b.ReportAllocs()
	for b.Loop() {
		v2 := newView(second, v1, "", nil, nil)
		m.observeSnapshot(first, second)
		if v2.entry("src-0500").Version != "v1.3.0" {
			b.Fatal("the changed source's channel does not serve its new version")
		}
	}
}
