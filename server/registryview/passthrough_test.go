package registryview

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// passthroughView serves channel stable of source app (org/app on an
// in-process registry) with passthrough on; it returns the view, its base
// URL and the registry's host.
func passthroughView(t *testing.T) (*View, string, string) {
	t.Helper()
	up := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(up.Close)
	host := strings.TrimPrefix(up.URL, "http://")
	p, _ := resolver.NewParser(resolver.SchemeSemver, "")
	src := catalog.Source{Name: "app", Image: host + "/org/app", Parser: p}
	sd := catalog.SourceData{Source: src}
	tag := src.Classify("v1.0.0")
	now := time.Now()
	tag.Present, tag.FirstSeen, tag.LastSeen = true, resolver.InstantOf(now), resolver.InstantOf(now)
	sd.Tags = append(sd.Tags, tag)
	snap := snapshot.New([]catalog.Channel{{Name: "stable", Source: "app", Stream: resolver.Released}}, []catalog.SourceData{sd}, nil, now)
	v := New(Options{Passthrough: true, Sources: []Source{{Name: "app", Image: host + "/org/app", Insecure: true}},
		Snapshot: func() *snapshot.Snapshot { return snap }})
	e := echo.New()
	v.Register(e)
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	return v, ts.URL, host
}

func pushImage(t *testing.T, host, repo, tag string) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(host+"/"+repo+":"+tag, name.Insecure)
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

func getTags(t *testing.T, url string) (int, tagList, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var l tagList
	_ = json.Unmarshal(b, &l)
	return res.StatusCode, l, string(b)
}

func TestPassthroughKeepsNothingForAMissingName(t *testing.T) {
	v, base, host := passthroughView(t)
	for range 3 {
		code, _, body := getTags(t, base+"/v2/channels/stable/nothing-here/tags/list")
		if code != http.StatusNotFound || !strings.Contains(body, "NAME_UNKNOWN") {
			t.Fatalf("a name the upstream lacks: %d %s, want 404 NAME_UNKNOWN", code, body)
		}
	}
	if n := v.up.kept(); n != 0 {
		t.Fatalf("%d upstream clients kept for a name the upstream lacks, want 0", n)
	}
	pushImage(t, host, "org/juju-db", "5.0")
	code, l, body := getTags(t, base+"/v2/channels/stable/juju-db/tags/list")
	if code != http.StatusOK || l.Name != "channels/stable/juju-db" || len(l.Tags) != 1 || l.Tags[0] != "5.0" {
		t.Fatalf("passthrough tags: %d %s, want the name asked for, channels/stable/juju-db, and tag 5.0", code, body)
	}
	if n := v.up.kept(); n != 1 {
		t.Fatalf("%d upstream clients kept after one name answered, want 1", n)
	}
}

func TestPassthroughClientsAreBounded(t *testing.T) {
	v, base, host := passthroughView(t)
	const names = maxTransports + 20
	for i := range names {
		repo := fmt.Sprintf("other-%03d", i)
		pushImage(t, host, "org/"+repo, "1")
		if code, l, body := getTags(t, base+"/v2/channels/stable/"+repo+"/tags/list"); code != http.StatusOK || l.Name != "channels/stable/"+repo {
			t.Fatalf("%s: %d %s", repo, code, body)
		}
		if n := v.up.kept(); n > maxTransports {
			t.Fatalf("%d upstream clients kept after %d names, want at most %d", n, i+1, maxTransports)
		}
	}
	if n := v.up.kept(); n != maxTransports {
		t.Fatalf("%d upstream clients kept after %d names, want exactly %d (least recently used out)", n, names, maxTransports)
	}
}
