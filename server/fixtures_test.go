package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/resolvertest"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// loadChannelserver loads the channelserver file from its one copy in
// internal/config/testdata through the configuration loader, as an operator
// imports it: `defaults: {source: <source>, stream: testing}` and a source in
// front, the rest unchanged.
func loadChannelserver(file, source, build string) ([]catalog.Channel, error) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "config", "testdata", file))
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("defaults: {source: %[1]s, stream: testing}\nsources:\n"+
		"  - {name: %[1]s, image: docker.io/rancher/%[1]s-upgrade, scheme: semver, build: '%[2]s'}\n", source, build)
	cfg, err := config.Parse(file, append([]byte(head), data...), nil)
	if err != nil {
		return nil, err
	}
	return cfg.Channels, nil
}

// rke2Tags is an rke2-like tag list where each of the fixture's excludes
// hits the newest release of its minor, and some releases have a second build.
func rke2Tags() []string {
	last := map[int]int{18: 4, 19: 13, 20: 9, 21: 3, 24: 9, 25: 5, 26: 2, 35: 8}
	var tags []string
	for minor := 18; minor <= 35; minor++ {
		n, ok := last[minor]
		if !ok {
			n = 5
		}
		for p := 0; p <= n; p++ {
			tags = append(tags, fmt.Sprintf("v1.%d.%d-rke2r1", minor, p))
		}
		if minor >= 22 && minor%2 == 0 && minor != 24 && minor != 26 {
			tags = append(tags, fmt.Sprintf("v1.%d.5-rke2r2", minor))
		}
	}
	return append(tags, "v1.20.9-rke2r2", "v1.21.3-rke2r2", "v1.35.9-rc2-rke2r1", "v1.36.0-rc1-rke2r1", "latest")
}

func TestChannelserverFixturesAnswerEveryChannel(t *testing.T) {
	k3sWant := map[string]string{
		"stable": "v1.21.2+k3s1", "latest": "v1.34.2+k3s2", "testing": "v1.35.0-rc2+k3s1",
		"v1.16": "v1.16.15+k3s1", "v1.16-testing": "", "v1.17": "v1.17.17+k3s1", "v1.17-testing": "",
		"v1.18": "v1.18.20+k3s1", "v1.18-testing": "", "v1.19": "v1.19.16+k3s2", "v1.20": "v1.20.15+k3s1",
		"v1.21": "v1.21.2+k3s1",
	}
	rke2Want := map[string]string{
		"stable": "v1.35.7+rke2r1", "latest": "v1.35.8+rke2r1", "testing": "v1.36.0-rc1+rke2r1",
		"v1.18": "v1.18.4+rke2r1",
		"v1.19": "v1.19.12+rke2r1", // v1.19.13+rke2r1 excluded
		"v1.20": "v1.20.9+rke2r2",  // only r1 of v1.20.9 is excluded
		"v1.21": "v1.21.3+rke2r1",  // r2 excluded, r1 still served
		"v1.22": "v1.22.5+rke2r2", "v1.23": "v1.23.5+rke2r1",
		"v1.24": "v1.24.8+rke2r1", "v1.25": "v1.25.4+rke2r1", "v1.26": "v1.26.2+rke2r1",
		"v1.27": "v1.27.5+rke2r1", "v1.28": "v1.28.5+rke2r2", "v1.29": "v1.29.5+rke2r1",
		"v1.30": "v1.30.5+rke2r2", "v1.31": "v1.31.5+rke2r1", "v1.32": "v1.32.5+rke2r2",
		"v1.33": "v1.33.5+rke2r1", "v1.34": "v1.34.5+rke2r2", "v1.35": "v1.35.8+rke2r1",
		"v1.36": "", // only a release candidate, which the exclude drops
	}
	tests := []struct {
		file, source, build, redirect string
		tags                          []string
		want                          map[string]string
	}{
		{"k3s-channel.yaml", "k3s", `k3s(\d+)`, "https://github.com/k3s-io/k3s/releases/tag/", k3sTags(), k3sWant},
		{"rke2-channels.yaml", "rke2", `rke2r(\d+)`, "https://github.com/rancher/rke2/releases/tag/", rke2Tags(), rke2Want},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := resolver.NewParser(resolver.SchemeSemver, tt.build)
			if err != nil {
				t.Fatal(err)
			}
			src := catalog.Source{Name: tt.source, Image: "docker.io/rancher/" + tt.source, Parser: p}
			channels, err := loadChannelserver(tt.file, tt.source, tt.build)
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot.New(channels, []catalog.SourceData{sourceData(src, tt.tags, nil)}, nil, loadedAt)
			_, ts, _ := newTestServer(t, snap, "")
			for _, ch := range channels {
				want, ok := tt.want[ch.Name]
				if !ok {
					t.Errorf("channel %q of %s has no expected answer in this test", ch.Name, tt.file)
					continue
				}
				res, body := get(t, ts, "/v1-release/channels/"+ch.Name)
				switch {
				case want == "" && res.StatusCode != http.StatusNotFound:
					t.Errorf("%s: %d Location %q, want 404", ch.Name, res.StatusCode, res.Header.Get("Location"))
				case want != "" && (res.StatusCode != http.StatusFound || res.Header.Get("Location") != tt.redirect+want):
					t.Errorf("%s: %d Location %q, want 302 %q; body %s", ch.Name, res.StatusCode, res.Header.Get("Location"), tt.redirect+want, body)
				}
			}
			if len(channels) != len(tt.want) {
				t.Errorf("%s has %d channels, the test expects %d", tt.file, len(channels), len(tt.want))
			}
		})
	}
}

// loadedAt and scanned fix every timestamp the golden files see.
var (
	loadedAt = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	scanned  = time.Date(2026, 5, 1, 11, 59, 0, 0, time.UTC)
)

// k3sTags is a realistic slice of rancher/k3s-upgrade's tag list: releases
// with build revisions (k3s1, k3s2), release candidates, tags that are not
// versions, and an out-of-order listing as registries return it.
func k3sTags() []string {
	tags := []string{"latest", "v1.21.2-k3s1", "v1.21.2-rc1-k3s1", "v1.21.1-k3s1", "v1.20.9-rc1-k3s1"}
	// minor -> newest patch, each patch released as k3s1.
	minors := [][2]int{{34, 2}, {16, 15}, {17, 17}, {18, 20}, {19, 16}, {20, 15}, {30, 14}, {31, 14}, {32, 10}, {33, 6}}
	for _, m := range minors {
		for p := 0; p <= m[1]; p++ {
			tags = append(tags, fmt.Sprintf("v1.%d.%d-k3s1", m[0], p))
		}
	}
	tags = append(tags,
		"v1.33.6-k3s2",        // a second build of the same release beats k3s1
		"v1.34.2-k3s2",        // newest overall
		"v1.34.3-rc1-k3s1",    // pre-release, newer than every release
		"v1.35.0-rc2-k3s1",    // pre-release of an unreleased minor
		"v1.35.0-alpha1-k3s1", // testing stream
		"v1.19.16-k3s2",
		"sha256-0123.sig", // cosign signature, not a version
	)
	return tags
}

// semverSource is a k3s-like source with build revisions.
func semverSource(t testing.TB, name, image string) catalog.Source {
	return resolvertest.SemverSource(t, name, image)
}

// sourceData is resolvertest.SourceData as scanned at the golden files' time.
func sourceData(src catalog.Source, tags []string, digests map[string]string) catalog.SourceData {
	return resolvertest.SourceData(src, tags, digests, scanned)
}

// k3sChannelserver is k3s-io/k3s channel.yaml through the real loader,
// read once: most tests serve it.
var k3sChannelserver = sync.OnceValues(func() ([]catalog.Channel, error) {
	return loadChannelserver("k3s-channel.yaml", "k3s", `k3s(\d+)`)
})

// k3sChannels is the k3s channel.yaml fixture with
// `defaults: {source: k3s, stream: testing}` and its redirectBase, and a few
// channels it does not have: minors of today's file (v1.32 has a blocked
// newest release, v1.33 a second build), a minor with no tags at all, and
// Tidemark's own default redirect.
func k3sChannels() []catalog.Channel {
	loaded, err := k3sChannelserver()
	if err != nil {
		panic(fmt.Sprintf("k3s fixture: %v", err))
	}
	ch := func(name, include string) catalog.Channel {
		return catalog.Channel{Name: name, Source: "k3s", Stream: resolver.Testing, Redirect: "https://github.com/k3s-io/k3s/releases/tag/",
			Include: regexp.MustCompile(include), Exclude: regexp.MustCompile(`^[^+]+-`)}
	}
	return append(slices.Clone(loaded), ch("v1.32", `v1\.32\..*`), ch("v1.33", `v1\.33\..*`), ch("v1.99", `v1\.99\..*`),
		catalog.Channel{Name: "k3s-released", Source: "k3s", Stream: resolver.Released})
}

// k3sSnapshot is the snapshot most tests serve.
func k3sSnapshot(t testing.TB) *snapshot.Snapshot {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	sd := sourceData(src, k3sTags(), nil)
	sd.Blocks = []catalog.Block{{Source: "k3s", Version: "v1.32.10+k3s1", Reason: "CVE", BlockedBy: "ops", BlockedAt: scanned}}
	states := map[string]catalog.ChannelState{
		"k3s-released": {Revision: 3, UpdatedAt: scanned},
	}
	return snapshot.New(k3sChannels(), []catalog.SourceData{sd}, states, loadedAt)
}

// newTestServer serves snap (loaded once) and returns the server and a
// test server whose every response is validated against openapi.yaml.
func newTestServer(t *testing.T, snap *snapshot.Snapshot, externalURL string) (*Server, *httptest.Server, *testutil.LockedBuffer) {
	t.Helper()
	return startServer(t, Options{
		ExternalURL: externalURL,
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
	})
}

// startServer builds a server from opts with its log in the returned
// buffer, loads it once, and serves it through a test server whose every
// response is validated against openapi.yaml.
func startServer(t *testing.T, opts Options) (*Server, *httptest.Server, *testutil.LockedBuffer) {
	t.Helper()
	logs := &testutil.LockedBuffer{}
	opts.Log = slog.New(slog.NewTextHandler(logs, nil))
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	ts := httptest.NewServer(validating(t, s.Handler()))
	t.Cleanup(ts.Close)
	return s, ts, logs
}

// send is the one request helper of the server tests: token is a bearer
// token, or a whole Authorization value when it holds a space; hdr are
// header name/value pairs. Redirects are not followed (a 302 is an answer).
func send(t *testing.T, method, url, token, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch {
	case strings.Contains(token, " "): // a whole Authorization value
		req.Header.Set("Authorization", token)
	case token != "":
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return res, b
}

// noRedirects is how system-upgrade-controller's client is configured.
var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }
