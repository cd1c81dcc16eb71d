package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
)

// fastRetry keeps fault tests quick while exercising the same code paths.
// Its per-request timeout is long: on a starved CI core a request may take a
// while, and a timeout would add a retry that tests counting requests do not
// expect. A test about timeouts sets its own.
var fastRetry = registryhttp.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond, MaxRetryAfter: 3 * time.Second, Timeout: 10 * time.Second}

func testSource(t *testing.T, name, image string) Source {
	t.Helper()
	p, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		t.Fatal(err)
	}
	return Source{Source: catalog.Source{Name: name, Image: image, Parser: p}, Insecure: true}
}

// newTestIndexer indexes one source "app" at reg/<repo>.
func newTestIndexer(t *testing.T, st Store, reg *testRegistry, repo string, edit ...func(*Source)) *Indexer {
	t.Helper()
	src := testSource(t, "app", reg.host+"/"+repo)
	for _, e := range edit {
		e(&src)
	}
	if st == nil {
		st = unusedStore{}
	}
	opts := Options{Sources: []Source{src}, Store: st, Metrics: prometheus.NewRegistry(), Log: testLog(t)}
	if s, ok := st.(*store.Store); ok {
		opts.Lock = storeLock(s)
	}
	ix, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ix.retry = fastRetry
	return ix
}

// storeLock is the store's indexer lock as Options.Lock, as serve wires it.
func storeLock(st *store.Store) TryLock {
	return func(ctx context.Context) (<-chan struct{}, func(), bool, error) {
		l, held, err := st.TryIndexerLock(ctx)
		return l.Lost(), l.Release, held, err
	}
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// list runs the listing half of a scan.
func list(t *testing.T, ix *Indexer) ([]string, int, error) {
	t.Helper()
	var n atomic.Int64
	_, tags, err := ix.listTags(context.Background(), ix.log, ix.order[0], &n)
	return tags, int(n.Load()), err
}

func tagNames(n int) []string {
	var tags []string
	for i := range n {
		tags = append(tags, fmt.Sprintf("v1.0.%d", i))
	}
	sort.Strings(tags)
	return tags
}

func TestListFollowsPaginationInTinyPages(t *testing.T) {
	reg := newTestRegistry(t)
	want := tagNames(25)
	reg.push("app", want...)
	reg.set(func(r *testRegistry) { r.pageSize = 4 })
	ix := newTestIndexer(t, nil, reg, "app")

	got, _, err := list(t, ix)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if n := reg.lists.Load(); n != 7 {
		t.Errorf("tag list requests = %d, want 7 pages of 4", n)
	}
	if p := ix.Status("app"); p.Pages != 7 || p.Tags != 25 {
		t.Errorf("progress = %d pages, %d tags; want 7, 25", p.Pages, p.Tags)
	}
}

func TestListTokenAuth(t *testing.T) {
	tests := []struct {
		name     string
		password string
		wantErr  bool
	}{
		{"right password gets a token and the list", "s3cret-pw", false},
		{"wrong password fails without printing it", "wrong-pw-xyz", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			reg.push("app", "v1.0.0", "v1.1.0")
			reg.set(func(r *testRegistry) { r.token, r.user, r.password = "tok-123", "bob", "s3cret-pw" })
			ix := newTestIndexer(t, nil, reg, "app", func(s *Source) {
				s.Username = "bob"
				s.Password = func() (string, error) { return tc.password, nil }
			})
			got, _, err := list(t, ix)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("listed %v with a wrong password", got)
				}
				if strings.Contains(err.Error(), tc.password) {
					t.Errorf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 || reg.tokens.Load() != 1 {
				t.Errorf("got %v with %d token requests; want 2 tags, 1 token", got, reg.tokens.Load())
			}
		})
	}
}

// failing answers the first `times` tag-list requests with fault (forever
// when times < 0).
func failing(times int64, fault func(w http.ResponseWriter)) func(http.ResponseWriter, *http.Request) bool {
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		if k := n.Add(1); times >= 0 && k > times {
			return false
		}
		fault(w)
		return true
	}
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func truncated(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"name":"app","tags":["v1.0.0","v1.`))
}

func TestListFaults(t *testing.T) {
	tests := []struct {
		name      string
		fault     func(http.ResponseWriter, *http.Request) bool
		wantErr   string        // "" means the listing succeeds
		timeout   time.Duration // per request; 0: fastRetry's
		minTime   time.Duration
		maxTime   time.Duration // 0: no bound
		wantLists int64         // tag list requests that got through to the registry
		// maxLists > wantLists where a retry that got through may time out
		// too on a slow machine, and be retried again; 0: exactly wantLists.
		maxLists int64
	}{
		{name: "429 with Retry-After seconds is waited out", fault: failing(1, status(429, "Retry-After", "1")), minTime: time.Second, wantLists: 1},
		{name: "429 with Retry-After date is waited out", fault: failing(1, func(w http.ResponseWriter) {
			// HTTP dates have whole seconds: 2s ahead is at least 1s away.
			status(429, "Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))(w)
		}), minTime: time.Second, wantLists: 1},
		{name: "500s are retried", fault: failing(3, status(500)), wantLists: 1},
		{name: "500s without end fail the listing", fault: failing(-1, status(503)), wantErr: "503"},
		{name: "a truncated body is fetched again", fault: failing(2, truncated), wantLists: 1},
		{name: "a body always truncated fails the listing", fault: failing(-1, truncated), wantErr: "unexpected EOF"},
		{name: "a hung connection times out and is retried", fault: failing(1, func(http.ResponseWriter) { time.Sleep(3 * time.Second) }),
			timeout: 300 * time.Millisecond, minTime: 300 * time.Millisecond, maxTime: 2500 * time.Millisecond, wantLists: 1, maxLists: int64(fastRetry.Attempts) - 1},
		{name: "a 404 is not retried", fault: failing(-1, status(404)), wantErr: "404"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			reg.push("app", "v1.0.0", "v1.1.0", "v2.0.0")
			reg.set(func(r *testRegistry) { r.fault = tc.fault })
			ix := newTestIndexer(t, nil, reg, "app")
			if tc.timeout > 0 {
				ix.retry.Timeout = tc.timeout
			}
			start := time.Now()
			got, n, err := list(t, ix)
			elapsed := time.Since(start)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 3 {
				t.Errorf("tags = %v, want 3", got)
			}
			if elapsed < tc.minTime {
				t.Errorf("took %s, want at least %s", elapsed, tc.minTime)
			}
			if tc.maxTime > 0 && elapsed > tc.maxTime {
				t.Errorf("took %s, want at most %s", elapsed, tc.maxTime)
			}
			if lists, most := reg.lists.Load(), max(tc.wantLists, tc.maxLists); lists < tc.wantLists || lists > most {
				t.Errorf("tag list requests reaching the registry = %d, want %d to %d", lists, tc.wantLists, most)
			}
			t.Logf("%d requests in %s", n, elapsed)
		})
	}
}

func TestListShrinkingBetweenPagesHasNoDuplicates(t *testing.T) {
	reg := newTestRegistry(t)
	all := tagNames(12)
	reg.push("app", all...)
	var pages atomic.Int64
	reg.set(func(r *testRegistry) {
		r.pageSize = 4
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			// After the first page, delete its last tag (where the next
			// page resumes) and two tags not yet listed.
			if strings.HasSuffix(req.URL.Path, "/tags/list") && pages.Add(1) == 2 {
				reg.untag("app", all[3], all[6], all[7])
			}
			return false
		}
	})
	ix := newTestIndexer(t, nil, reg, "app")
	got, _, err := list(t, ix)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	var want []string
	for i, tag := range all {
		if i != 6 && i != 7 {
			want = append(want, tag)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
}

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

func TestExcludeIsARegexpOnTheTag(t *testing.T) {
	src := testSource(t, "app", "example.com/app")
	src.Exclude = regexp.MustCompile(`^(latest|.*\.sig)$`)
	for tag, want := range map[string]bool{"latest": true, "v1.sig": true, "v1.0.0": false, "latest-1": false} {
		if got := src.Exclude.MatchString(tag); got != want {
			t.Errorf("exclude %q = %v, want %v", tag, got, want)
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

// listQueries records the query of every tag list request reg receives.
func listQueries(reg *testRegistry) func() []string {
	var mu sync.Mutex
	var qs []string
	reg.set(func(r *testRegistry) {
		r.fault = func(_ http.ResponseWriter, req *http.Request) bool {
			if strings.HasSuffix(req.URL.Path, "/tags/list") {
				mu.Lock()
				qs = append(qs, req.URL.RawQuery)
				mu.Unlock()
			}
			return false
		}
	})
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), qs...) }
}

// A far registry costs a round trip per page: asking for the registry's
// own page (every tag at once, from distribution) lists in one request.
func TestListAsksForTheRegistrysOwnPageFirst(t *testing.T) {
	reg := newTestRegistry(t)
	want := tagNames(25)
	reg.push("app", want...)
	reg.set(func(r *testRegistry) { r.pageSize = 1000 })
	queries := listQueries(reg)
	ix := newTestIndexer(t, nil, reg, "app")

	got, _, err := list(t, ix)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 25 {
		t.Errorf("listed %d tags, want 25", len(got))
	}
	if diff := cmp.Diff([]string{""}, queries()); diff != "" {
		t.Errorf("tag list queries (-want +got):\n%s", diff)
	}
}

func TestListAsksForPagesWhenTheOnePageIsTooLarge(t *testing.T) {
	reg := newTestRegistry(t)
	want := tagNames(25)
	reg.push("app", want...)
	reg.set(func(r *testRegistry) { r.pageSize = 1000 })
	queries := listQueries(reg)
	ix := newTestIndexer(t, nil, reg, "app")
	ix.pageLimits.Tags, ix.pageSize = 10, 4

	got, _, err := list(t, ix)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	qs := queries()
	if len(qs) != 8 || qs[0] != "" || qs[1] != "n=4" {
		t.Errorf("tag list queries = %q, want the registry's page, then 7 pages of n=4", qs)
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
