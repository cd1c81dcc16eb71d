package server

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestConsolePagesWithoutJavaScript reads every console page as plain HTTP,
// as a browser without JavaScript (or a screen reader's first pass) gets
// it: the data is in the HTML, not fetched by script.
func TestConsolePagesWithoutJavaScript(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	for _, tc := range []struct {
		name   string
		path   string
		status int
		want   []string
		absent []string
	}{
		{"channels page lists every channel with what it serves", "/ui/", 200,
			[]string{`data-channel="stable" data-version="v1.21.2+k3s1"`, `<span class="badge pinned" title="the configuration's latest: fixes v1.21.2+k3s1">fixed</span>`,
				"none: fixed in the configuration",
				`data-channel="v1.32" data-version="v1.32.9+k3s1"`, `data-channel="v1.99" data-version=""`,
				`href="/ui/channels/v1.33"`, `href="/ui/sources/k3s"`, "docker.io/rancher/k3s-upgrade", `data-live="/ui/live/channels"`}, nil},
		{"channel page shows the served version, digest and the history's absence", "/ui/channels/v1.33", 200,
			[]string{`<span class="version">v1.33.6+k3s2</span>`, "tag <code>v1.33.6-k3s2</code>", "sha256:",
				`data-api-path="/api/v1/channels/v1.33/pin"`, `<option value="v1.33.6+k3s2">`,
				"needs the database, which this server was started without"},
			[]string{`id="unpin-form"`}},
		{"a channel serving nothing says why", "/ui/channels/v1.99", 200, []string{`<span class="none">nothing</span>`}, nil},
		{"an unknown channel is a 404 page naming it", "/ui/channels/nope", 404, []string{`channel "nope"`, "Not Found"}, nil},
		{"source page has versions, the blocked mark and its reason, scans and unparsed tags", "/ui/sources/k3s", 200,
			[]string{`<tr data-version="v1.32.10+k3s1" class="blocked">`, `<span class="badge blocked">blocked</span> <span class="why">CVE</span>`,
				`<span class="badge outcome-ok">ok</span>`, "sha256-0123.sig", "<code>latest</code>", `href="/ui/channels/v1.32"`},
			nil},
		{"a stream shows only its own versions", "/ui/sources/k3s?stream=proposed", 200,
			[]string{`data-version="v1.34.3-rc1+k3s1"`, `aria-current="page">proposed`}, []string{`data-version="v1.33.6+k3s2"`}},
		{"an unknown stream is a 400 page", "/ui/sources/k3s?stream=nightly", 400, []string{`unknown stream "nightly"`}, nil},
		{"an unknown source is a 404 page", "/ui/sources/nope", 404, []string{`source "nope"`}, nil},
		{"resolve form with no query shows only the form", "/ui/resolve", 200, []string{`<form method="get" action="/ui/resolve"`, `<option value="k3s">`}, []string{`id="answer"`}},
		{"resolve shows the answer and its path", "/ui/resolve?source=k3s&current=v1.32.3%2Bk3s1", 200,
			[]string{`id="answer"`, `id="target"><span class="version">v1.33.6+k3s2</span>`, `<ol class="path" id="path"`, `<li><span class="version">v1.32.9+k3s1</span></li>`}, nil},
		{"a resolve the API refuses shows its problem at the field it names", "/ui/resolve?source=k3s&current=banana", 400,
			[]string{`id="r-current" name="current" required value="banana"`, `aria-invalid="true" aria-describedby="resolve-problem"`, `id="resolve-problem" role="alert"`},
			[]string{`id="answer"`}},
		{"a stylesheet is served from the binary", "/ui/assets/console.css", 200, []string{"prefers-color-scheme"}, nil},
		{"an unknown asset is a 404", "/ui/assets/nope.css", 404, nil, nil},
		{"a template is not an asset", "/ui/assets/layout.html", 404, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, ts, tc.path)
			text := html.UnescapeString(string(body))
			if res.StatusCode != tc.status {
				t.Fatalf("GET %s: %d, want %d\n%.600s", tc.path, res.StatusCode, tc.status, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("GET %s: no %q in the page", tc.path, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a) {
					t.Errorf("GET %s: %q is in the page, should not be", tc.path, a)
				}
			}
			if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
				checkSelfContained(t, tc.path, string(body), res.Header)
			}
		})
	}
}

// externalRef is a link the browser would load by itself from elsewhere
// (an <a> a person follows, such as a risk's URL, loads nothing).
var externalRef = regexp.MustCompile(`(?i)(src=|<link[^>]*href=)"(https?:)?//|@import|url\(`)

// checkSelfContained: a page loads nothing from outside the binary (no CDN,
// no font) and forbids inline script by policy.
func checkSelfContained(t *testing.T, path, body string, h http.Header) {
	t.Helper()
	if m := externalRef.FindString(body); m != "" {
		t.Errorf("GET %s: loads from elsewhere: %q", path, m)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET %s: Content-Security-Policy %q does not confine script to this server", path, csp)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") {
		t.Errorf("GET %s: inline script, which the policy blocks", path)
	}
}

// TestRootSendsBrowsersToTheConsole: a browser at the server's address
// lands on the console; every other client keeps the API root's links.
func TestRootSendsBrowsersToTheConsole(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "https://tidemark.example.com")
	for _, tc := range []struct {
		name, accept string
		status       int
		location     string
	}{
		{"a browser is redirected", "text/html,application/xhtml+xml,*/*;q=0.8", http.StatusFound, "https://tidemark.example.com/ui/"},
		{"curl gets the links", "*/*", http.StatusOK, ""},
		{"a JSON client gets the links", "application/json", http.StatusOK, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, ts, "/", "Accept", tc.accept)
			if res.StatusCode != tc.status || res.Header.Get("Location") != tc.location {
				t.Fatalf("GET / Accept %q: %d Location %q, want %d %q\n%s", tc.accept, res.StatusCode, res.Header.Get("Location"), tc.status, tc.location, body)
			}
		})
	}
	t.Run("/ui without the slash is the console too", func(t *testing.T) {
		res, body := get(t, ts, "/ui")
		if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="channels"`) {
			t.Fatalf("GET /ui: %d\n%.300s", res.StatusCode, body)
		}
	})
}

// TestConsoleLiveRowsRevalidate: the channel page's poll costs a 304 until
// a channel moves, then brings the new rows.
func TestConsoleLiveRowsRevalidate(t *testing.T) {
	var cur atomic.Pointer[snapshot.Snapshot]
	cur.Store(k3sSnapshot(t))
	s, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) { return cur.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := newValidatingServer(t, s)

	res, body := get(t, ts, "/ui/live/channels")
	etag := res.Header.Get("ETag")
	if res.StatusCode != http.StatusOK || etag == "" || !strings.Contains(string(body), `data-channel="v1.33"`) {
		t.Fatalf("first poll: %d ETag %q\n%.300s", res.StatusCode, etag, body)
	}
	if res, body := get(t, ts, "/ui/live/channels", "If-None-Match", etag); res.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Fatalf("unchanged poll: %d with %d bytes, want 304 and none", res.StatusCode, len(body))
	}

	// v1.33 is pinned back: the next poll has the row that says so.
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	states := map[string]catalog.ChannelState{"v1.33": {Revision: 1, Pin: "v1.33.5+k3s1", UpdatedAt: scanned}}
	cur.Store(snapshot.New(k3sChannels(), []catalog.SourceData{sourceData(src, k3sTags(), nil)}, states, loadedAt))
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, body = get(t, ts, "/ui/live/channels", "If-None-Match", etag)
	if res.StatusCode != http.StatusOK || res.Header.Get("ETag") == etag {
		t.Fatalf("poll after a pin: %d ETag %q (was %q), want 200 and a new one", res.StatusCode, res.Header.Get("ETag"), etag)
	}
	if !strings.Contains(html.UnescapeString(string(body)), `data-channel="v1.33" data-version="v1.33.5+k3s1"`) {
		t.Errorf("poll after a pin does not show v1.33 on v1.33.5+k3s1:\n%s", body)
	}
}

func newValidatingServer(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(validating(t, s.Handler()))
	t.Cleanup(ts.Close)
	return ts
}

// BenchmarkConsoleLivePoll is the cost of one open channel page's poll
// when nothing moved (a 304): the rows are rendered to compare ETags.
func BenchmarkConsoleLivePoll(b *testing.B) {
	snap := k3sSnapshot(b)
	s, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) { return snap, nil }})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/live/channels", nil))
	etag := rec.Header().Get("ETag")
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "/ui/live/channels", nil)
		req.Header.Set("If-None-Match", etag)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusNotModified {
			b.Fatalf("%d, want 304", rec.Code)
		}
	}
}
