package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// TestK3sChannelAnswers checks every channel of k3s's channel.yaml (plus a
// few) over a realistic tag set, as a channel URL client sees them.
func TestK3sChannelAnswers(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "https://tidemark.example.com")
	const gh = "https://github.com/k3s-io/k3s/releases/tag/"
	tests := []struct {
		channel  string
		location string // "" means 404
	}{
		{"stable", gh + "v1.21.2+k3s1"},      // fixed latest from config
		{"latest", gh + "v1.34.2+k3s2"},      // build revision k3s2 beats k3s1
		{"testing", gh + "v1.35.0-rc2+k3s1"}, // rc beats alpha; pre-releases only
		{"v1.16", gh + "v1.16.15+k3s1"},      //
		{"v1.16-testing", ""},                // no 1.16 pre-release indexed
		{"v1.17", gh + "v1.17.17+k3s1"},      //
		{"v1.18", gh + "v1.18.20+k3s1"},      // 20 > 9 numerically
		{"v1.19", gh + "v1.19.16+k3s2"},      // channelserver would answer k3s1
		{"v1.20", gh + "v1.20.15+k3s1"},      // v1.20.9-rc1 excluded
		{"v1.21", gh + "v1.21.2+k3s1"},       //
		{"v1.32", gh + "v1.32.9+k3s1"},       // v1.32.10+k3s1 is blocked
		{"v1.33", gh + "v1.33.6+k3s2"},       //
		{"v1.99", ""},                        // nothing matches
		{"nope", ""},                         // unknown channel
		{"k3s-released", "https://tidemark.example.com/api/v1/sources/k3s/versions/v1.34.2+k3s2"}, // default redirect
	}
	for _, tt := range tests {
		name := tt.channel + " resolves to " + tt.location
		if tt.location == "" {
			name = tt.channel + " is 404"
		}
		t.Run(name, func(t *testing.T) {
			res, body := get(t, ts, "/v1-release/channels/"+tt.channel)
			if tt.location == "" {
				if res.StatusCode != http.StatusNotFound {
					t.Fatalf("status %d, want 404; Location %q", res.StatusCode, res.Header.Get("Location"))
				}
				var e openapi.ReleaseError
				if err := json.Unmarshal(body, &e); err != nil || e.Code != "NotFound" || e.Status != 404 {
					t.Errorf("404 body %s is not channelserver's error (%v)", body, err)
				}
				return
			}
			if res.StatusCode != http.StatusFound {
				t.Fatalf("status %d, want 302; body %s", res.StatusCode, body)
			}
			if got := res.Header.Get("Location"); got != tt.location {
				t.Errorf("Location %q, want %q", got, tt.location)
			}
			if want := `<a href="` + tt.location + `">Found</a>.`; !strings.HasPrefix(string(body), want) {
				t.Errorf("body %q, want channelserver's %q", body, want)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", got)
			}
		})
	}
}

// TestChannelAnswersVaryByWhatTheyDependOn: the same channel URL answers
// a 302 or the JSON object by Accept, and a cluster's own answer by its
// headers (a stepwise step here), so every answer (302, 200, 304) names
// them in Vary, which a shared cache keys on.
func TestChannelAnswersVaryByWhatTheyDependOn(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	want := []string{"Accept", "X-SUC-Cluster-ID", "X-SUC-Latest-Version"}
	varies := func(t *testing.T, res *http.Response) {
		t.Helper()
		var got []string
		for _, v := range res.Header.Values("Vary") {
			for _, f := range strings.Split(v, ",") {
				got = append(got, http.CanonicalHeaderKey(strings.TrimSpace(f)))
			}
		}
		for _, w := range want {
			if !slices.Contains(got, http.CanonicalHeaderKey(w)) {
				t.Errorf("status %d: Vary %q lacks %s", res.StatusCode, got, w)
			}
		}
	}
	res, _ := get(t, ts, "/v1-release/channels/latest")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want 302", res.StatusCode)
	}
	varies(t, res)
	res, _ = get(t, ts, "/v1-release/channels/latest", "Accept", "application/json")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("JSON: status %d, want 200", res.StatusCode)
	}
	varies(t, res)
	res, _ = get(t, ts, "/v1-release/channels/latest", "Accept", "application/json", "If-None-Match", res.Header.Get("ETag"))
	if res.StatusCode != http.StatusNotModified {
		t.Fatalf("revalidation: status %d, want 304", res.StatusCode)
	}
	varies(t, res)
	// Why it matters: two clusters asking the same URL get different answers.
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	_, ts, _ = newTestServer(t, snapshot.New([]catalog.Channel{{Name: "stepwise", Source: "k3s", Stream: resolver.Released, Stepwise: true}},
		[]catalog.SourceData{sourceData(src, k3sTags(), nil)}, nil, loadedAt), "")
	a, _ := get(t, ts, "/v1-release/channels/stepwise", "X-SUC-Cluster-ID", "a", "X-SUC-Latest-Version", "v1.31.2+k3s1")
	b, _ := get(t, ts, "/v1-release/channels/stepwise", "X-SUC-Cluster-ID", "b", "X-SUC-Latest-Version", "v1.32.9+k3s1")
	if a.StatusCode != http.StatusFound || b.StatusCode != http.StatusFound || a.Header.Get("Location") == b.Header.Get("Location") {
		t.Fatalf("stepwise answers %d %q and %d %q: want two different 302s", a.StatusCode, a.Header.Get("Location"), b.StatusCode, b.Header.Get("Location"))
	}
	varies(t, a)
}

func TestChannelURLFailuresAreNever2xxOr3xx(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	for _, path := range []string{
		"/v1-release/channels/nope",
		"/v1-release/channels/v1.99",
		"/v1-release/channels/stable/", // channelserver: 404 too
		"/v1-release/channels/v1.16-testing",
	} {
		t.Run(path, func(t *testing.T) {
			for _, accept := range []string{"", "application/json"} {
				res, body := get(t, ts, path, "Accept", accept)
				if res.StatusCode != http.StatusNotFound {
					t.Errorf("Accept %q: status %d, want 404; body %s", accept, res.StatusCode, body)
				}
				if res.Header.Get("Location") != "" {
					t.Errorf("Accept %q: a failure carries Location %q", accept, res.Header.Get("Location"))
				}
			}
		})
	}
	t.Run("HEAD of a failure is 404 too", func(t *testing.T) {
		// channelserver answered HEAD 405; the contract has HEAD wherever
		// GET is, so a monitor's HEAD must not look like a resolved channel.
		res, err := noRedirects.Head(ts.URL + "/v1-release/channels/nope")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound || res.Header.Get("Location") != "" {
			t.Errorf("HEAD status %d Location %q, want 404 and none", res.StatusCode, res.Header.Get("Location"))
		}
	})
}

func TestChannelJSONHasETagAndAnswers304(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	for _, path := range []string{"/api/v1/channels/k3s-released", "/v1-release/channels/k3s-released"} {
		t.Run(path, func(t *testing.T) {
			res, body := get(t, ts, path, "Accept", "application/json")
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200; body %s", res.StatusCode, body)
			}
			var ch openapi.Channel
			if err := json.Unmarshal(body, &ch); err != nil {
				t.Fatal(err)
			}
			if ch.Version == nil || *ch.Version != "v1.34.2+k3s2" || ch.Tag == nil || *ch.Tag != "v1.34.2-k3s2" {
				t.Errorf("channel object %s: want version v1.34.2+k3s2, tag v1.34.2-k3s2", body)
			}
			etag := res.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			res, body = get(t, ts, path, "Accept", "application/json", "If-None-Match", `"other", `+etag)
			if res.StatusCode != http.StatusNotModified || len(body) != 0 {
				t.Errorf("If-None-Match %s: status %d body %q, want 304 and no body", etag, res.StatusCode, body)
			}
			res, _ = get(t, ts, path, "Accept", "application/json", "If-None-Match", `"3-f-v1.0.0"`)
			if res.StatusCode != http.StatusOK {
				t.Errorf("stale If-None-Match: status %d, want 200", res.StatusCode)
			}
		})
	}
}

// TestReTagChangesETag: a tag re-pointed to another image leaves the
// version (and the revision) as they were, yet the answer is a different
// image, so a revalidating client must get it rather than 304.
func TestReTagChangesETag(t *testing.T) {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	const rebuilt = "sha256:0000000000000000000000000000000000000000000000000000000000000001"
	digests := map[string]string{}
	s, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) {
		states := map[string]catalog.ChannelState{"k3s-released": {Revision: 3, UpdatedAt: scanned}}
		return snapshot.New(k3sChannels(), []catalog.SourceData{sourceData(src, k3sTags(), digests)}, states, loadedAt), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(validating(t, s.Handler()))
	t.Cleanup(ts.Close)
	const path = "/api/v1/channels/k3s-released"
	res, _ := get(t, ts, path)
	before := res.Header.Get("ETag")

	digests["v1.34.2-k3s2"] = rebuilt
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, body := get(t, ts, path, "If-None-Match", before)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), rebuilt) {
		t.Fatalf("If-None-Match with the ETag from before the re-tag: %d %s; want 200 with digest %s", res.StatusCode, body, rebuilt)
	}
	after := res.Header.Get("ETag")
	if after == before {
		t.Errorf("ETag %s unchanged by a re-tag", after)
	}
	if res, _ := get(t, ts, path, "If-None-Match", after); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", res.StatusCode)
	}
	// If-Match still reads the revision the ETag starts with.
	req := httptest.NewRequest(http.MethodPut, path+"/pin", nil)
	req.Header.Set("If-Match", after)
	if rev, err := core.IfMatchRevision(req); err != nil || rev != 3 {
		t.Errorf("core.IfMatchRevision(%s) = %d, %v; want 3", after, rev, err)
	}
}

func TestVersionPathAcceptsPlusRawEscapedAndTag(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	for _, v := range []string{"v1.33.6+k3s2", "v1.33.6%2Bk3s2", "v1.33.6%2bk3s2", "v1.33.6-k3s2"} {
		t.Run(v, func(t *testing.T) {
			res, body := get(t, ts, "/api/v1/sources/k3s/versions/"+v)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want 200; body %s", res.StatusCode, body)
			}
			var got openapi.Version
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Version != "v1.33.6+k3s2" || got.Tag != "v1.33.6-k3s2" || got.Build != 2 {
				t.Errorf("got %+v, want v1.33.6+k3s2 (tag v1.33.6-k3s2, build 2)", got)
			}
		})
	}
	res, body := get(t, ts, "/api/v1/sources/k3s/versions/v9.9.9")
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `"param":"version"`) {
		t.Errorf("unknown version: status %d body %s, want 404 naming param version", res.StatusCode, body)
	}
}

func TestDefaultRedirectFollowsTheRequest(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	tests := []struct {
		proto string
		want  string
	}{
		{"", "http://tidemark.internal:8080/api/v1/sources/k3s/versions/v1.34.2+k3s2"},
		{"https", "https://tidemark.internal:8080/api/v1/sources/k3s/versions/v1.34.2+k3s2"},
		{"https, http", "https://tidemark.internal:8080/api/v1/sources/k3s/versions/v1.34.2+k3s2"},
		{"gopher", "http://tidemark.internal:8080/api/v1/sources/k3s/versions/v1.34.2+k3s2"},
	}
	for _, tt := range tests {
		t.Run("X-Forwarded-Proto "+tt.proto, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1-release/channels/k3s-released", nil)
			req.Host = "tidemark.internal:8080"
			if tt.proto != "" {
				req.Header.Set("X-Forwarded-Proto", tt.proto)
			}
			res, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := res.Header.Get("Location"); res.StatusCode != http.StatusFound || got != tt.want {
				t.Errorf("status %d Location %q, want 302 %q", res.StatusCode, got, tt.want)
			}
		})
	}
}

func TestAccessLogRecordsUpgradeControllerHeaders(t *testing.T) {
	_, ts, logs := newTestServer(t, k3sSnapshot(t), "")
	res, _ := get(t, ts, "/v1-release/channels/stable", "X-SUC-Cluster-ID", "c-4fz2k", "X-SUC-Latest-Version", "v1.20.15+k3s1")
	if res.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want 302", res.StatusCode)
	}
	line := logs.String()
	for _, want := range []string{"path=/v1-release/channels/stable", "status=302", "suc_cluster_id=c-4fz2k", "suc_latest_version=v1.20.15+k3s1"} {
		if !strings.Contains(line, want) {
			t.Errorf("access log lacks %q:\n%s", want, line)
		}
	}
}

func TestPathRedirectIsAbsolute(t *testing.T) {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	channels := append(k3sChannels(), catalog.Channel{Name: "dl", Source: "k3s", Stream: resolver.Released, Redirect: "/dl/"})
	snap := snapshot.New(channels, []catalog.SourceData{sourceData(src, k3sTags(), nil)}, nil, loadedAt)
	for _, tt := range []struct{ external, want string }{
		{"https://tm.example", "https://tm.example/dl/v1.34.2+k3s2"},
		{"", "http://tidemark.internal/dl/v1.34.2+k3s2"},
	} {
		_, ts, _ := newTestServer(t, snap, tt.external)
		req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1-release/channels/dl", nil)
		req.Host = "tidemark.internal"
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("Location"); res.StatusCode != http.StatusFound || got != tt.want {
			t.Errorf("external_url %q: status %d Location %q, want 302 %q", tt.external, res.StatusCode, got, tt.want)
		}
	}
}

func TestAcceptIsCaseInsensitive(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	res, body := get(t, ts, "/v1-release/channels/k3s-released", "Accept", "APPLICATION/JSON")
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"version"`) {
		t.Errorf("Accept: APPLICATION/JSON got %d %s, want 200 and the channel object", res.StatusCode, body)
	}
}
