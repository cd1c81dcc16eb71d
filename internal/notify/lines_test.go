package notify_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/resolvertest"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestALineCrossingIsAnnouncedOnceByTheLeader: two replicas see the same
// snapshots, in which line 1.31 goes from supported to expired (its end
// passes) and 1.32 from supported to deprecated; only the leader records
// the events, one per crossing, with the clusters on the line as counted
// then, and the receiver gets data {source, line, end, clusters}. A line
// already expired when first seen is not announced.
func TestALineCrossingIsAnnouncedOnceByTheLeader(t *testing.T) {
	url := storetest.URL(t)
	r := newReceiver(t)
	r.up.Store(true)
	end := time.Date(2026, 10, 28, 0, 0, 0, 0, time.UTC)
	src := resolvertest.SemverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	src.Lifecycle = lifecycle.Policy{DeprecateBefore: 48 * time.Hour,
		End: map[string]time.Time{"1.30": end.Add(-time.Hour), "1.31": end, "1.32": end.Add(48 * time.Hour)}}
	data := func(tags ...string) []catalog.SourceData {
		return []catalog.SourceData{resolvertest.SourceData(src, tags, nil, end.Add(-365*24*time.Hour))}
	}
	before := snapshot.New(nil, data("v1.31.0-k3s1", "v1.32.0-k3s1"), nil, end.Add(-time.Minute))
	after := snapshot.New(nil, data("v1.30.0-k3s1", "v1.31.0-k3s1", "v1.32.0-k3s1"), nil, end.Add(time.Minute))

	var replicas []*notify.Deliverer
	for _, leading := range []bool{true, false} {
		st, err := store.Open(context.Background(), url, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		d, err := notify.New(notify.Options{Endpoints: []notify.Endpoint{{Name: "ops", Kind: "webhook", URL: r.srv.URL}}, Store: st, Source: "https://tidemark.test",
			Metrics: prometheus.NewRegistry(), Poll: 20 * time.Millisecond, Leading: func() bool { return leading }})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.StartCursors(context.Background()); err != nil {
			t.Fatal(err)
		}
		d.SetLineClusters(func(_ context.Context, source, line string) (int, error) { return map[string]int{"1.31": 3}[line], nil })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		replicas = append(replicas, d)
	}
	for _, d := range replicas {
		d.SnapshotChanged(nil, before) // the first as leader reconciles
		d.SnapshotChanged(before, after)
	}
	type body struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	waitFor(t, "two line events", func() bool { b, _ := r.received(); return len(b) >= 2 })
	time.Sleep(100 * time.Millisecond) // a third (the follower's, or 1.30's) would be a bug
	bodies, _ := r.received()
	got := map[string]string{}
	for _, b := range bodies {
		var e body
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatal(err)
		}
		got[e.Type] += string(e.Data)
	}
	want := map[string]string{
		"dev.tidemark.line.expired":    `{"source":"k3s","line":"1.31","end":"2026-10-28T00:00:00Z","clusters":3}`,
		"dev.tidemark.line.deprecated": `{"source":"k3s","line":"1.32","end":"2026-10-30T00:00:00Z","clusters":0}`,
	}
	doc, err := os.ReadFile("../../docs/lifecycle.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "`"+want["dev.tidemark.line.expired"]+"`") {
		t.Errorf("docs/lifecycle.md does not show a line event's data as sent: %s", want["dev.tidemark.line.expired"])
	}
	if len(bodies) != 2 || got["dev.tidemark.line.expired"] != want["dev.tidemark.line.expired"] || got["dev.tidemark.line.deprecated"] != want["dev.tidemark.line.deprecated"] {
		t.Errorf("%d events: %v\nwant %v", len(bodies), got, want)
	}
}
