package server

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/enroll"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// benchKeys is a key store of n enrolled clusters, bench-cluster-I with
// key tdm_bench-I.
type benchKeys int

func (n benchKeys) EnrolledKeys(context.Context) ([]resolver.EnrolledKey, error) {
	out := make([]resolver.EnrolledKey, n)
	for i := range out {
		out[i] = resolver.EnrolledKey{Hash: sha256.Sum256([]byte("tdm_bench-" + strconv.Itoa(i))), ID: "bench-cluster-" + strconv.Itoa(i)}
	}
	return out, nil
}

func (benchKeys) ListenEnrollments(ctx context.Context, _ func()) error { <-ctx.Done(); return nil }

// BenchmarkEnrolledRedirect is BenchmarkFleetRedirect's request with
// fleet.enrollment required: 10,000 enrolled clusters in turn, each
// sending its key as ?key= (checked in memory, no database).
func BenchmarkEnrolledRedirect(b *testing.B) {
	const clusters = 10_000
	snap := k3sSnapshot(b)
	keys := enroll.New(enroll.Required, benchKeys(clusters), nil)
	if err := keys.Reload(context.Background()); err != nil {
		b.Fatal(err)
	}
	s, err := New(Options{
		ExternalURL: "https://tidemark.example.com",
		Log:         slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Fleet:       fleet.Options{Store: discardFleet{}, MaxClusters: clusters, NewClustersPerMinute: clusters},
		Enrollment:  keys,
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
		r := httptest.NewRequest(http.MethodGet, "/v1-release/channels/v1.33?key=tdm_bench-"+strconv.Itoa(i), nil)
		r.Header.Set("X-SUC-Cluster-ID", "ignored")
		r.Header.Set("X-SUC-Latest-Version", "v1.33.4-k3s1")
		reqs[i] = r
	}
	benchRedirects(b, s.Handler(), reqs)
}
