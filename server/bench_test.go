package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
