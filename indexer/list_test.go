package indexer

import (
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
)

// fastRetry keeps fault tests quick while exercising the same code paths.
// Its per-request timeout is long: on a starved CI core a request may take a
// while, and a timeout would add a retry that tests counting requests do not
// expect. A test about timeouts sets its own.
var fastRetry = registryhttp.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 10 * time.Millisecond, MaxRetryAfter: 3 * time.Second, Timeout: 10 * time.Second}

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

func TestExcludeIsARegexpOnTheTag(t *testing.T) {
	src := testSource(t, "app", "example.com/app")
	src.Exclude = regexp.MustCompile(`^(latest|.*\.sig)$`)
	for tag, want := range map[string]bool{"latest": true, "v1.sig": true, "v1.0.0": false, "latest-1": false} {
		if got := src.Exclude.MatchString(tag); got != want {
			t.Errorf("exclude %q = %v, want %v", tag, got, want)
		}
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
