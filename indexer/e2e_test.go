package indexer

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// manifestCounter counts manifest requests on their way to the registry.
type manifestCounter struct{ n atomic.Int64 }

func (c *manifestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.Contains(r.URL.Path, "/manifests/") {
		c.n.Add(1)
	}
	return remote.DefaultTransport.RoundTrip(r)
}

// TestEndToEndDistributionRegistry indexes the CNCF distribution registry
// (Debian's docker-registry), started here; it fails when the binary is
// missing, because CI installs it.
func TestEndToEndDistributionRegistry(t *testing.T) {
	ctx := context.Background()
	reg, err := distreg.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	var tags []string
	for i := range 30 {
		tags = append(tags, fmt.Sprintf("1.%d.%d", i/10, i%10))
	}
	tags = append(tags, "latest", "nightly", "2.0.0-rc.1")
	digest, err := distreg.Push(ctx, reg.Host, "team/app", tags, 4)
	if err != nil {
		t.Fatal(err)
	}

	st := storetest.New(t)
	src := testSource(t, "app", reg.Host+"/team/app")
	src.Exclude = regexp.MustCompile(`^latest$`)
	src.Concurrency = 4
	counter := &manifestCounter{}
	ix, err := New(Options{Sources: []Source{src}, Store: st, Log: testLog(t), Metrics: prometheus.NewRegistry(), Transport: counter})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SyncSources(ctx, []catalog.Source{src.Source}); err != nil {
		t.Fatal(err)
	}

	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	got := indexed(t, st, ix)
	if len(got.Tags) != 32 || got.LastScan.TagsNew != 32 {
		t.Fatalf("first scan: %d tags, scan %+v; want 32 new (latest excluded)", len(got.Tags), got.LastScan)
	}
	for _, tag := range got.Tags {
		if tag.Digest.String() != digest.String() {
			t.Fatalf("%s digest %q, want %s", tag.Name, tag.Digest, digest)
		}
	}
	if n := counter.n.Load(); n != 32 {
		t.Errorf("first scan: %d manifest requests, want 32", n)
	}

	counter.n.Store(0)
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if n := counter.n.Load(); n != 0 {
		t.Errorf("no-change rescan: %d manifest requests, want 0", n)
	}

	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	moved, err := distreg.PushImage(ctx, img, reg.Host, "team/app", []string{"1.0.5", "3.0.0"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.RecheckDigests(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	got = indexed(t, st, ix)
	all := byName(got.Tags)
	if tag := all["1.0.5"]; tag.Digest.String() != moved.String() || tag.PreviousDigest() != digest.String() {
		t.Errorf("re-tagged 1.0.5: digest %s previous %s; want %s previous %s", tag.Digest, tag.PreviousDigest(), moved, digest)
	}
	if tag := all["3.0.0"]; tag.Digest.String() != moved.String() || got.LastScan.TagsNew != 1 {
		t.Errorf("new tag 3.0.0 digest %q, scan %+v", tag.Digest, got.LastScan)
	}
}
