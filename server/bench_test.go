package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// BenchmarkChannelRedirect is the hot path without the network: one channel
// URL answered with its access log line (JSON, discarded) and metrics.
func BenchmarkChannelRedirect(b *testing.B) {
	snap := k3sSnapshot(b)
	h := benchHandler(b, snap)
	req := httptest.NewRequest(http.MethodGet, "/v1-release/channels/v1.33", nil)
	bench302(b, h, req)
}

// BenchmarkStepwiseRedirect is a stepwise channel's answer to a cluster
// that reports its version (the per-cluster decision, settle off): the
// path every surface's cluster answer goes through.
func BenchmarkStepwiseRedirect(b *testing.B) {
	src := semverSource(b, "k3s", "docker.io/rancher/k3s-upgrade")
	snap := snapshot.New([]catalog.Channel{{Name: "latest", Source: "k3s", Stream: resolver.Released, Stepwise: true}},
		[]catalog.SourceData{sourceData(src, k3sTags(), nil)}, nil, time.Now())
	h := benchHandler(b, snap)
	req := httptest.NewRequest(http.MethodGet, "/v1-release/channels/latest", nil)
	req.Header.Set("X-SUC-Cluster-ID", "cluster-1")
	req.Header.Set("X-SUC-Latest-Version", "v1.31.2-k3s1")
	bench302(b, h, req)
}

// BenchmarkFleetRedirect is a channel URL asked by 200,000 clusters in
// turn, each from its own X-Forwarded-For address behind a trusted proxy,
// with fleet recording on and its batches thrown away: what recording
// costs a request (issue 31), without the network. Every cluster asks
// once before the loop, as a fleet polling at its steady rate is known.
// Run it with -cpu 1 to count the recorder's own goroutine in ns/op.
func BenchmarkFleetRedirect(b *testing.B) {
	const clusters = 200_000
	snap := k3sSnapshot(b)
	s, err := New(Options{
		ExternalURL:    "https://tidemark.example.com",
		Log:            slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load:           func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Fleet:          fleet.Options{Store: discardFleet{}, MaxClusters: clusters},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { s.Fleet().Run(ctx, func(string, ...any) {}); close(ran) }()
	defer func() { cancel(); <-ran }()
	reqs := make([]*http.Request, clusters)
	for i := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/v1-release/channels/v1.33", nil)
		r.RemoteAddr = "127.0.0.1:40000"
		r.Header.Set("X-SUC-Cluster-ID", "bench-cluster-"+strconv.Itoa(i))
		r.Header.Set("X-SUC-Latest-Version", fmt.Sprintf("v1.%d.%d-k3s1", 16+i%18, i%3*5))
		r.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i/65536%256, i/256%256, i%256))
		reqs[i] = r
	}
	benchRedirects(b, s.Handler(), reqs)
}

// BenchmarkFloorRedirect is the floor the channel answer is measured
// against: a bare net/http handler answering a fixed 302, no access log,
// no metrics, through the same recorder as the other benchmarks here.
func BenchmarkFloorRedirect(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://github.com/k3s-io/k3s/releases/tag/v1.33.6+k3s2", http.StatusFound)
	})
	bench302(b, h, httptest.NewRequest(http.MethodGet, "/v1-release/channels/v1.33", nil))
}

// BenchmarkClusterRedirect is the recorded cluster answer: a channel URL
// asked by 10,000 clusters in turn from loopback, each naming itself
// (X-SUC-Cluster-ID) and its version (X-SUC-Latest-Version), through the
// fleet recorder with its batches thrown away. Every cluster asks once
// before the loop, as a fleet polling at its steady rate is known.
func BenchmarkClusterRedirect(b *testing.B) {
	const clusters = 10_000
	snap := k3sSnapshot(b)
	s, err := New(Options{
		ExternalURL: "https://tidemark.example.com",
		Log:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Fleet:       fleet.Options{Store: discardFleet{}, NewClustersPerMinute: 1 << 30, MaxClusters: 1 << 30},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { s.Fleet().Run(ctx, func(string, ...any) {}); close(ran) }()
	defer func() { cancel(); <-ran }()
	reqs := make([]*http.Request, clusters)
	for i := range reqs {
		r := httptest.NewRequest(http.MethodGet, "/v1-release/channels/v1.33", nil)
		r.Header.Set("X-SUC-Cluster-ID", "bench-cluster-"+strconv.Itoa(i))
		r.Header.Set("X-SUC-Latest-Version", fmt.Sprintf("v1.%d.%d-k3s1", 16+i%18, i%3*5))
		reqs[i] = r
	}
	benchRedirects(b, s.Handler(), reqs)
}

// discardFleet takes every batch at once and throws it away.
type discardFleet struct{ fleet.Store }

func (discardFleet) RecordFleet(context.Context, []resolver.Sighting) ([]resolver.ClusterRecord, error) {
	return nil, nil
}

// benchHandler is a server answering from snap, with a real JSON access
// log line (discarded) and metrics, as the hot path runs in production.
func benchHandler(b *testing.B, snap *snapshot.Snapshot) http.Handler {
	b.Helper()
	s, err := New(Options{
		ExternalURL: "https://tidemark.example.com",
		Log:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		b.Fatal(err)
	}
	return s.Handler()
}

// bench302 answers req with h in the benchmark loop; each must be a 302.
func bench302(b *testing.B, h http.Handler, req *http.Request) {
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusFound {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// benchRedirects asks h each of reqs once (each cluster is then known),
// then in turn for the benchmark's loop, each answer a 302.
func benchRedirects(b *testing.B, h http.Handler, reqs []*http.Request) {
	b.Helper()
	for _, r := range reqs {
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, reqs[i%len(reqs)])
		if w.Code != http.StatusFound {
			b.Fatalf("status %d", w.Code)
		}
		i++
	}
}
