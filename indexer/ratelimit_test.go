package indexer

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", -1},
		{"7", 7 * time.Second},
		{"-3", -1},
		{"soon", -1},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tc := range tests {
		if got := registryhttp.RetryAfter(tc.in, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestBackoffIsBoundedFullJitter(t *testing.T) {
	rt := &registryhttp.RetryTransport{Policy: registryhttp.RetryPolicy{Base: 100 * time.Millisecond, Max: time.Second}}
	for attempt := 1; attempt <= 10; attempt++ {
		ceil := min(100*time.Millisecond<<(attempt-1), time.Second)
		for range 50 {
			if d := rt.Backoff(attempt); d < 0 || d >= ceil {
				t.Fatalf("backoff(%d) = %s, want in [0, %s)", attempt, d, ceil)
			}
		}
	}
}

func TestRateLimitIsSharedPerRegistry(t *testing.T) {
	mk := func(name, image string) Source { return testSource(t, name, image) }
	ix, err := New(Options{
		Sources: []Source{
			mk("a", "docker.io/library/alpine"), mk("b", "index.docker.io/rancher/k3s"),
			mk("c", "registry-1.docker.io/juju/jujud"), mk("d", "ghcr.io/x/y"), mk("e", "ghcr.io/x/z"),
			mk("f", "quay.io/q/r"),
		},
		Store:      unusedStore{},
		RateLimits: map[string]float64{"ghcr.io": 5},
	})
	if err != nil {
		t.Fatal(err)
	}
	lim := func(n string) *rate.Limiter { return ix.sources[n].limiter }
	if lim("a") == nil || lim("a") != lim("b") || lim("a") != lim("c") || lim("a").Limit() != DefaultDockerHubRate {
		t.Errorf("Docker Hub sources do not share one %d req/s limiter", DefaultDockerHubRate)
	}
	if lim("d") == nil || lim("d") != lim("e") || lim("d").Limit() != 5 {
		t.Error("ghcr.io sources do not share the configured 5 req/s limiter")
	}
	if lim("f") != nil {
		t.Error("quay.io is limited though nothing was configured")
	}
}

func TestRateLimitSpacesRequests(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", tagNames(10)...)
	reg.set(func(r *testRegistry) { r.pageSize = 1 })
	src := testSource(t, "app", reg.host+"/app")
	const rps = 25
	ix, err := New(Options{Sources: []Source{src}, Store: unusedStore{}, RateLimits: map[string]float64{reg.host: rps}})
	if err != nil {
		t.Fatal(err)
	}
	// Spend the burst so that every request below waits its turn.
	ix.sources["app"].limiter.AllowN(time.Now(), rps)
	start := time.Now()
	_, n, err := list(t, ix)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	if want := time.Duration(n-1) * time.Second / rps; n < 11 || elapsed < want*9/10 {
		t.Errorf("%d requests in %s; want >= 11 requests taking >= %s at %d req/s", n, elapsed, want, rps)
	}
}

func TestRateLimitHoldsInTheFirstSecond(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", tagNames(40)...)
	var mu sync.Mutex
	var at []time.Time
	reg.set(func(r *testRegistry) {
		r.pageSize = 1
		r.fault = func(http.ResponseWriter, *http.Request) bool {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			return false
		}
	})
	src := testSource(t, "app", reg.host+"/app")
	const rps = 20
	ix, err := New(Options{Sources: []Source{src}, Store: unusedStore{}, RateLimits: map[string]float64{reg.host: rps}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := list(t, ix); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	first := 0
	for _, a := range at {
		if a.Sub(at[0]) < time.Second {
			first++
		}
	}
	if first > rps+1 {
		t.Errorf("%d requests in the first second at %d req/s; want at most %d", first, rps, rps+1)
	}
}
