package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
)

// BenchmarkChannelRedirect is the hot path without the network: one channel
// URL answered with its access log line (JSON, discarded) and metrics.
func BenchmarkChannelRedirect(b *testing.B) {
	snap := k3sSnapshot(b)
	s, err := New(Options{
		ExternalURL: "https://tidemark.example.com",
		Log:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load:        func(context.Context) (*resolver.Snapshot, error) { return snap, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	req := httptest.NewRequest(http.MethodGet, "/v1-release/channels/v1.33", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusFound {
			b.Fatalf("status %d", w.Code)
		}
	}
}
