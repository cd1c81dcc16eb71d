package server

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// sucResolve does what system-upgrade-controller does with a Plan's
// channel: GET without Accept, redirects not followed, only a 302 counts,
// the version is filepath.Base of the Location path, and "+" becomes "-" to
// make the image tag.
func sucResolve(t *testing.T, channelURL string) (tag string, ok bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, channelURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-SUC-Cluster-ID", "test-cluster")
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", channelURL, err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusFound {
		return "", false
	}
	loc, err := res.Location()
	if err != nil {
		t.Fatalf("GET %s: 302 with a bad Location: %v", channelURL, err)
	}
	return strings.ReplaceAll(filepath.Base(loc.Path), "+", "-"), true
}

// TestUpgradeControllerGetsPullableTags pushes images to a real in-process
// registry, indexes its tag list, and checks that every channel answer,
// read the way system-upgrade-controller reads it, names a tag that exists.
func TestUpgradeControllerGetsPullableTags(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	repo, err := name.NewRepository(host+"/rancher/k3s-upgrade", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	pushed := []string{
		"v1.32.9-k3s1", "v1.32.10-k3s1",
		"v1.33.5-k3s1", "v1.33.6-k3s1", "v1.33.6-k3s2",
		"v1.34.0-rc1-k3s1", "v1.34.0-k3s1",
		"latest",
	}
	for _, tag := range pushed {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(repo.Tag(tag), img); err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
	}

	// Index what the registry lists, as the indexer would.
	listed, err := remote.List(repo)
	if err != nil {
		t.Fatalf("list %s: %v", repo, err)
	}
	src := semverSource(t, "k3s", repo.String())
	sd := sourceData(src, listed, nil)
	channels := []catalog.Channel{
		{Name: "stable", Source: "k3s", Latest: "v1.33.6+k3s1"},
		{Name: "latest", Source: "k3s", Stream: resolver.Testing, Include: regexpMust(`.*`), Exclude: regexpMust(`^[^+]+-`)},
		{Name: "v1.33", Source: "k3s", Include: regexpMust(`v1\.33\..*`)},
		{Name: "v1.32", Source: "k3s", Include: regexpMust(`v1\.32\..*`)},
		{Name: "proposed", Source: "k3s", Stream: resolver.Proposed},
		{Name: "github", Source: "k3s", Include: regexpMust(`v1\.33\..*`), Redirect: "https://github.com/k3s-io/k3s/releases/tag/"},
		{Name: "v1.40", Source: "k3s", Include: regexpMust(`v1\.40\..*`)},
	}
	snap := snapshot.New(channels, []catalog.SourceData{sd}, nil, loadedAt)
	_, ts, logs := newTestServer(t, snap, "")

	want := map[string]string{
		"stable":   "v1.33.6-k3s1",
		"latest":   "v1.34.0-k3s1",
		"v1.33":    "v1.33.6-k3s2", // build revision 2 beats 1
		"v1.32":    "v1.32.10-k3s1",
		"proposed": "v1.34.0-k3s1", // a release beats its own rc
		"github":   "v1.33.6-k3s2",
		"v1.40":    "", // no such minor: 404, the controller keeps its version
	}
	for _, ch := range channels {
		t.Run(ch.Name, func(t *testing.T) {
			tag, ok := sucResolve(t, ts.URL+"/v1-release/channels/"+url.PathEscape(ch.Name))
			if want[ch.Name] == "" {
				if ok {
					t.Fatalf("resolved to %q, want no 302", tag)
				}
				return
			}
			if !ok || tag != want[ch.Name] {
				t.Fatalf("resolved to %q (302: %v), want %q", tag, ok, want[ch.Name])
			}
			if _, err := remote.Head(repo.Tag(tag)); err != nil {
				t.Errorf("the controller would pull %s:%s, which the registry does not have: %v", repo, tag, err)
			}
		})
	}
	if !strings.Contains(logs.String(), "suc_cluster_id=test-cluster") {
		t.Error("access log does not record X-SUC-Cluster-ID")
	}
}
