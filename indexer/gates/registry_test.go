package gates_test

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/internal/cosigntest"
)

// testRegistry is go-containerregistry's registry in process, with the OCI
// 1.1 referrers API on, behind a transport that counts requests and the
// most that were in flight at once.
type testRegistry struct {
	t    *testing.T
	repo name.Repository
	rt   *countingTransport
	auth http.RoundTripper // authenticated once, as the indexer's scan transport is
}

func newRegistry(t *testing.T) *testRegistry {
	t.Helper()
	srv := httptest.NewServer(registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		registry.WithReferrersSupport(true),
	))
	t.Cleanup(srv.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/rancher/k3s-upgrade", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	rt := &countingTransport{next: http.DefaultTransport}
	// Like the indexer's scan transport: pinged and authenticated once, so
	// ggcr makes no ping per call and every count below is a registry
	// request the check itself made.
	auth, err := transport.NewWithContext(context.Background(), repo.Registry, authn.Anonymous, rt,
		[]string{repo.Scope(transport.PullScope)})
	if err != nil {
		t.Fatal(err)
	}
	rt.n.Store(0)
	return &testRegistry{t: t, repo: repo, rt: rt, auth: auth}
}

// opts are what the code under test gets: every request counted.
func (r *testRegistry) opts() []remote.Option {
	return []remote.Option{remote.WithTransport(r.auth)}
}

type countingTransport struct {
	next     http.RoundTripper
	n        atomic.Int64
	mu       sync.Mutex
	inFlight int
	maxIn    int
	delay    time.Duration // added to every request
}

func (c *countingTransport) reset() {
	c.mu.Lock()
	c.maxIn = 0
	c.mu.Unlock()
}

func (c *countingTransport) maxInFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxIn
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.inFlight++
	c.maxIn = max(c.maxIn, c.inFlight)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	if c.delay > 0 {
		time.Sleep(c.delay)
	}
	return c.next.RoundTrip(req)
}

// image pushes a single-platform image under tag and returns its digest.
func (r *testRegistry) image(tag, os, arch, variant string) v1.Hash {
	r.t.Helper()
	img := r.platformImage(os, arch, variant)
	if err := remote.Write(r.repo.Tag(tag), img); err != nil {
		r.t.Fatal(err)
	}
	return digestOf(r.t, img)
}

func (r *testRegistry) platformImage(os, arch, variant string) v1.Image {
	r.t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		r.t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		r.t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = os, arch, variant
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		r.t.Fatal(err)
	}
	return img
}

// index pushes an image index with one image per platform under tag.
func (r *testRegistry) index(tag string, platforms ...string) v1.Hash {
	r.t.Helper()
	var idx v1.ImageIndex = empty.Index
	idx = mutate.IndexMediaType(idx, types.OCIImageIndex)
	for _, s := range platforms {
		p, err := v1.ParsePlatform(s)
		if err != nil {
			r.t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        r.platformImage(p.OS, p.Architecture, p.Variant),
			Descriptor: v1.Descriptor{Platform: p},
		})
	}
	if err := remote.WriteIndex(r.repo.Tag(tag), idx); err != nil {
		r.t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pushTagSignature pushes a classic signature image at sha256-<hex>.sig.
func (r *testRegistry) pushTagSignature(d v1.Hash, payload []byte, sigB64 string) {
	r.t.Helper()
	if err := remote.Write(r.repo.Tag(gates.SignatureTag(d)), cosigntest.SignatureImage(r.t, payload, sigB64)); err != nil {
		r.t.Fatal(err)
	}
}

// pushReferrer pushes the signature as an OCI 1.1 referrer of d (cosign
// --registry-referrers-mode=oci-1-1): a manifest whose subject is d's.
func (r *testRegistry) pushReferrer(d v1.Hash, payload []byte, sigB64 string) {
	r.t.Helper()
	desc, err := remote.Get(r.repo.Digest(d.String()))
	if err != nil {
		r.t.Fatal(err)
	}
	// The in-process registry reports a referrer's artifactType from its
	// config media type.
	img := mutate.ConfigMediaType(cosigntest.SignatureImage(r.t, payload, sigB64), gates.SignatureArtifactType)
	img = mutate.Subject(img, desc.Descriptor).(v1.Image)
	if err := remote.Write(r.repo.Digest(digestOf(r.t, img).String()), img); err != nil {
		r.t.Fatal(err)
	}
}
