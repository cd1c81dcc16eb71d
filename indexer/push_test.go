package indexer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

func TestMatchNormalisesHostsAndDockerHub(t *testing.T) {
	p, _ := resolver.NewParser(resolver.SchemeSemver, "")
	src := func(name, image string) Source {
		return Source{Source: catalog.Source{Name: name, Image: image, Parser: p}}
	}
	ix, err := New(Options{Store: unusedStore{}, Sources: []Source{
		src("nginx", "nginx"),
		src("k3s", "docker.io/rancher/k3s-upgrade"),
		src("mirror", "mirror.example.com:5000/rancher/k3s-upgrade"),
		src("ghcr", "ghcr.io/org/app"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ev   PushEvent
		want []string
	}{
		{"official image without library/", PushEvent{Host: "registry-1.docker.io", Repository: "nginx"}, []string{"nginx"}},
		{"official image with library/", PushEvent{Host: "docker.io", Repository: "library/nginx"}, []string{"nginx"}},
		{"hub host alias picks the hub source", PushEvent{Host: "index.docker.io", Repository: "rancher/k3s-upgrade"}, []string{"k3s"}},
		{"mirror host picks the mirror", PushEvent{Host: "mirror.example.com:5000", Repository: "rancher/k3s-upgrade"}, []string{"mirror"}},
		{"unknown host matches by path", PushEvent{Host: "10.0.0.5:5000", Repository: "rancher/k3s-upgrade"}, []string{"k3s", "mirror"}},
		{"no host matches by path", PushEvent{Repository: "org/app"}, []string{"ghcr"}},
		{"unknown repository matches nothing", PushEvent{Host: "ghcr.io", Repository: "org/other"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ix.Match(tt.ev)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Match(%+v) = %v, want %v", tt.ev, got, tt.want)
			}
		})
	}
}

// waitIdle waits until the source's push queue is drained.
func waitIdle(t *testing.T, ix *Indexer) {
	t.Helper()
	waitFor(t, "push queue drained", func() bool {
		q := &ix.order[0].push
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.workers == 0
	})
}

func TestPushIndexesOneTagWithoutListing(t *testing.T) {
	reg := newTestRegistry(t)
	st, ix := newStoreIndexer(t, reg)
	var changes atomic.Int64
	ix.onChng = func(string) { changes.Add(1) }
	ctx := context.Background()
	d := reg.push("app", "1.0.0")

	if got, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "1.0.0"}); err != nil || !slices.Equal(got, []string{"app"}) {
		t.Fatalf("Push matched %v, want [app]", got)
	}
	waitIdle(t, ix)
	tags := byName(indexed(t, st, ix).Tags)
	if tg, ok := tags["1.0.0"]; !ok || tg.Digest.String() != d.String() || !tg.Valid {
		t.Fatalf("indexed %+v, want 1.0.0 valid with digest %s", tags, d)
	}
	if reg.lists.Load() != 0 {
		t.Errorf("%d tag list requests, want none", reg.lists.Load())
	}
	if changes.Load() != 1 {
		t.Errorf("OnChange called %d times, want 1", changes.Load())
	}

	// The same event again changes nothing and reloads nothing.
	ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "1.0.0"})
	waitIdle(t, ix)
	if changes.Load() != 1 {
		t.Errorf("a repeated event called OnChange (%d)", changes.Load())
	}

	// A delete the registry has not done yet leaves the tag; once done, absent.
	oldWindow := pushWindow
	pushWindow = 20 * time.Millisecond
	t.Cleanup(func() { pushWindow = oldWindow })
	ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "1.0.0", Delete: true})
	waitIdle(t, ix)
	if _, ok := byName(indexed(t, st, ix).Tags)["1.0.0"]; !ok {
		t.Fatal("a delete event for a tag still in the registry removed it")
	}
	reg.untag("app", "1.0.0")
	ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "1.0.0", Delete: true})
	waitIdle(t, ix)
	if _, ok := byName(indexed(t, st, ix).Tags)["1.0.0"]; ok {
		t.Fatal("a confirmed delete left the tag present")
	}
}

// The registry may notify before the pushed manifest is readable: the tag
// is asked for again until it is.
func TestPushRetriesUntilTheTagIsVisible(t *testing.T) {
	reg := newTestRegistry(t)
	st, ix := newStoreIndexer(t, reg)
	reg.push("app", "2.0.0")
	var heads atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.Contains(req.URL.Path, "/manifests/") && heads.Add(1) <= 3 {
				http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"not yet"}]}`, http.StatusNotFound)
				return true
			}
			return false
		}
	})
	start := time.Now()
	ix.Push(context.Background(), PushEvent{Host: reg.host, Repository: "app", Tag: "2.0.0"})
	waitIdle(t, ix)
	if _, ok := byName(indexed(t, st, ix).Tags)["2.0.0"]; !ok {
		t.Fatalf("tag not indexed after %d manifest requests", heads.Load())
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("took %v for three early 404s", el)
	}
}

// TestAFloodOfAbsentTagsDelaysNoRealPush: a thousand webhook events naming
// tags the registry does not have are asked about a few at a time and in
// the background; a real push that arrives behind them is indexed within
// a second, and the queue refuses past max_pending (issue 24 item 9).
func TestAFloodOfAbsentTagsDelaysNoRealPush(t *testing.T) {
	oldWindow := pushWindow
	pushWindow = pushFast // the flood drains within waitIdle's 5 s
	t.Cleanup(func() { pushWindow = oldWindow })
	reg := newTestRegistry(t)
	st, ix := newStoreIndexer(t, reg)
	var heads, inFlight, peak atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.Contains(req.URL.Path, "/manifests/") {
				heads.Add(1)
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(time.Millisecond) // a registry's answer takes a while
				inFlight.Add(-1)
			}
			return false
		}
	})
	ctx := context.Background()
	for i := range 1000 {
		if _, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: fmt.Sprintf("absent-%d", i)}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	d := reg.push("app", "3.0.0")
	pushed := time.Now()
	if _, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "3.0.0"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the real push", func() bool {
		tg, ok := byName(indexed(t, st, ix).Tags)["3.0.0"]
		return ok && tg.Digest.String() == d.String()
	})
	if took := time.Since(pushed); took > time.Second {
		t.Errorf("the real push took %v behind the flood, want under 1s", took)
	}
	t.Logf("real push indexed %v after its event, behind 1000 absent tags", time.Since(pushed).Round(time.Millisecond))
	waitIdle(t, ix)
	if p := peak.Load(); p > pushWorkers {
		t.Errorf("%d HEADs at once, want at most %d", p, pushWorkers)
	}
	if _, ok := byName(indexed(t, st, ix).Tags)["absent-1"]; ok {
		t.Error("an absent tag was indexed")
	}
	t.Logf("%d HEADs for 1001 events", heads.Load())
}

// TestAFullPushQueueRefuses: with every worker waiting on the registry and
// max_pending tags queued, one more tag is refused; a newer event of a
// queued tag still replaces it.
func TestAFullPushQueueRefuses(t *testing.T) {
	// Set before the first HEADs, which fix their deadlines: once released
	// the absent tags are given up at once, not after the default window.
	oldWindow := pushWindow
	pushWindow = 10 * time.Millisecond
	t.Cleanup(func() { pushWindow = oldWindow })
	reg := newTestRegistry(t)
	_, ix := newStoreIndexer(t, reg)
	ix.maxPending = 10
	release := make(chan struct{})
	var waiting atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.Contains(req.URL.Path, "/manifests/") {
				waiting.Add(1)
				<-release
			}
			return false
		}
	})
	ctx := context.Background()
	for i := range pushWorkers + 10 {
		if _, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: fmt.Sprintf("t%d", i)}); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if i < pushWorkers {
			waitFor(t, "a worker at the registry", func() bool { return waiting.Load() == int64(i+1) })
		}
	}
	if _, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "t9"}); err != nil {
		t.Errorf("a newer event of a queued tag: %v, want accepted", err)
	}
	_, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "extra"})
	if !errors.Is(err, ErrPushQueueFull) || !strings.Contains(err.Error(), "app") {
		t.Errorf("event past max_pending: %v, want ErrPushQueueFull naming the source", err)
	}
	close(release)
	waitIdle(t, ix)
}

// TestPushLookUpsAreBoundedPerRegistry: two sources on one registry,
// flooded at once, never have more than pushWorkers HEADs in flight
// between them (CONTRACT section 12: "a few at a time per registry").
func TestPushLookUpsAreBoundedPerRegistry(t *testing.T) {
	reg := newTestRegistry(t)
	st := storetest.New(t)
	a, b := testSource(t, "a", reg.host+"/a"), testSource(t, "b", reg.host+"/b")
	ix, err := New(Options{Sources: []Source{a, b}, Store: st, Metrics: prometheus.NewRegistry(), Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SyncSources(context.Background(), []catalog.Source{a.Source, b.Source}); err != nil {
		t.Fatal(err)
	}
	var inFlight, peak atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if strings.Contains(req.URL.Path, "/manifests/") {
				n := inFlight.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				inFlight.Add(-1)
			}
			return false
		}
	})
	oldWindow := pushWindow
	pushWindow = 20 * time.Millisecond
	t.Cleanup(func() { pushWindow = oldWindow })
	ctx := context.Background()
	for i := range 40 {
		for _, repo := range []string{"a", "b"} {
			if _, err := ix.Push(ctx, PushEvent{Host: reg.host, Repository: repo, Tag: fmt.Sprintf("absent-%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFor(t, "both queues drained", func() bool {
		for _, src := range ix.order {
			src.push.mu.Lock()
			w := src.push.workers
			src.push.mu.Unlock()
			if w != 0 {
				return false
			}
		}
		return true
	})
	if p := peak.Load(); p > pushWorkers || p < 2 {
		t.Errorf("%d HEADs at once across two sources of one registry, want 2..%d", p, pushWorkers)
	}
}
