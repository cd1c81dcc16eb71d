package registryview

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Source is one source as the view reaches its upstream registry.
type Source struct {
	Name     string
	Image    string // registry/repository, as configured
	Insecure bool   // plain-HTTP registry
	Username string
	// Password reads the source's password at use time; nil: anonymous
	// (or Keychain).
	Password func() (string, error)
}

// manifestAccept is every manifest media type a registry client may pull.
var manifestAccept = strings.Join([]string{
	"application/vnd.oci.image.index.v1+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.v1+prettyjws",
	"application/vnd.docker.distribution.manifest.v1+json",
}, ", ")

// MaxManifest bounds a manifest read from upstream (distribution's own
// limit is 4 MiB).
const MaxManifest = 4 << 20

// transportTTL is how long an authenticated transport is reused; ggcr's
// bearer transport refreshes its token by itself within it.
const transportTTL = 10 * time.Minute

// maxTransports bounds the authenticated transports kept: one per
// repository reached, the sources' own and passthrough names.
const maxTransports = 256

// upstream reaches sources' registries, one authenticated transport per
// repository, kept for transportTTL in a bounded LRU; a transport is kept
// only once the upstream has answered with something other than 404 or
// 401, so names the upstream lacks cost no memory.
type upstream struct {
	base     http.RoundTripper
	keychain authn.Keychain
	once     sync.Once
	rts      *expirable.LRU[string, http.RoundTripper]
	// requests counts requests made upstream, by kind (manifest, blob).
	requests func(kind string)
}

func (u *upstream) cache() *expirable.LRU[string, http.RoundTripper] {
	u.once.Do(func() { u.rts = expirable.NewLRU[string, http.RoundTripper](maxTransports, nil, transportTTL) })
	return u.rts
}

// upstreamError is an upstream answer that is not a success, kept with its
// status so the view can answer in kind.
type upstreamError struct {
	status int
	msg    string
}

func (e *upstreamError) Error() string { return e.msg }

func (u *upstream) repo(src *Source, other string) (name.Repository, error) {
	var opts []name.Option
	if src.Insecure {
		opts = append(opts, name.Insecure)
	}
	repo, err := name.NewRepository(src.Image, opts...)
	if err != nil || other == "" {
		return repo, err
	}
	// A passthrough name lives beside the source's image upstream.
	return name.NewRepository(repo.RegistryStr()+"/"+path.Join(path.Dir(repo.RepositoryStr()), other), opts...)
}

// transport is repo's authenticated transport; kept says whether it came
// from the cache (a new one is kept by do once it has been answered).
func (u *upstream) transport(ctx context.Context, src *Source, repo name.Repository) (rt http.RoundTripper, kept bool, err error) {
	if rt, ok := u.cache().Get(transportKey(src, repo)); ok {
		return rt, true, nil
	}
	var auth authn.Authenticator = authn.Anonymous
	switch {
	case src.Password != nil:
		pw, err := src.Password()
		if err != nil {
			return nil, false, err
		}
		auth = &authn.Basic{Username: src.Username, Password: pw}
	case u.keychain != nil:
		a, err := authn.Resolve(ctx, u.keychain, repo)
		if err != nil {
			return nil, false, fmt.Errorf("credentials for %s: %w", repo.RegistryStr(), err)
		}
		auth = a
	}
	rt, err = transport.NewWithContext(ctx, repo.Registry, auth, u.base, []string{repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, false, fmt.Errorf("authenticating to %s: %w", repo.RegistryStr(), err)
	}
	return rt, false, nil
}

func transportKey(src *Source, repo name.Repository) string { return src.Name + "\x00" + repo.String() }

// forget drops a transport that failed, so the next request
// authenticates again.
func (u *upstream) forget(src *Source, repo name.Repository) {
	u.cache().Remove(transportKey(src, repo))
}

// kept is the number of transports kept.
func (u *upstream) kept() int { return u.cache().Len() }

func (u *upstream) do(ctx context.Context, src *Source, other, method, kind, ref string, hdr http.Header) (*http.Response, name.Repository, error) {
	repo, err := u.repo(src, other)
	if err != nil {
		return nil, repo, err
	}
	rt, kept, err := u.transport(ctx, src, repo)
	if err != nil {
		return nil, repo, &upstreamError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	url := fmt.Sprintf("%s://%s/v2/%s/%s/%s", repo.Scheme(), repo.RegistryStr(), repo.RepositoryStr(), kind, ref)
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, repo, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if u.requests != nil {
		u.requests(strings.TrimSuffix(kind, "s"))
	}
	res, err := rt.RoundTrip(req)
	if err != nil {
		u.forget(src, repo)
		return nil, repo, &upstreamError{status: http.StatusServiceUnavailable, msg: fmt.Sprintf("upstream %s: %v", repo.RegistryStr(), err)}
	}
	switch {
	case res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusNotFound && kind == "tags":
		// A name the upstream lacks answers 404 to its tags (NAME_UNKNOWN).
		u.forget(src, repo)
	case !kept && res.StatusCode != http.StatusNotFound:
		u.cache().Add(transportKey(src, repo), rt)
	}
	return res, repo, nil
}

// Manifest is a manifest as the upstream registry holds it.
type Manifest struct {
	Body      []byte
	MediaType string
	Digest    string
}

// manifest reads ref (a tag or a digest) of src's repository (other: a
// passthrough name beside it). A digest ref is verified against the bytes.
func (u *upstream) manifest(ctx context.Context, src *Source, other, ref string) (*Manifest, error) {
	res, repo, err := u.do(ctx, src, other, http.MethodGet, "manifests", ref, http.Header{"Accept": {manifestAccept}})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return nil, &upstreamError{status: res.StatusCode, msg: fmt.Sprintf("upstream %s answered %s for manifest %s", repo, res.Status, ref)}
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxManifest+1))
	if err != nil {
		return nil, &upstreamError{status: http.StatusServiceUnavailable, msg: fmt.Sprintf("upstream %s: reading manifest %s: %v", repo, ref, err)}
	}
	if len(body) > MaxManifest {
		return nil, &upstreamError{status: http.StatusBadGateway, msg: fmt.Sprintf("upstream %s: manifest %s is over %d bytes", repo, ref, MaxManifest)}
	}
	sum := sha256.Sum256(body)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if strings.HasPrefix(ref, "sha256:") && ref != digest {
		return nil, &upstreamError{status: http.StatusBadGateway, msg: fmt.Sprintf("upstream %s: manifest %s has digest %s: refused", repo, ref, digest)}
	}
	mt, _, _ := strings.Cut(res.Header.Get("Content-Type"), ";")
	return &Manifest{Body: body, MediaType: strings.TrimSpace(mt), Digest: digest}, nil
}

// blob opens a blob of src's repository (other: a passthrough name); the
// caller closes the body.
func (u *upstream) blob(ctx context.Context, src *Source, other, method, digest string) (*http.Response, error) {
	res, repo, err := u.do(ctx, src, other, method, "blobs", digest, nil)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		return nil, &upstreamError{status: res.StatusCode, msg: fmt.Sprintf("upstream %s answered %s for blob %s", repo, res.Status, digest)}
	}
	return res, nil
}

// blobURL is where a client fetches a blob of src's repository itself.
func (u *upstream) blobURL(src *Source, other, digest string) (string, error) {
	repo, err := u.repo(src, other)
	if err != nil {
		return "", err
	}
	reg := repo.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "registry-1.docker.io"
	}
	return fmt.Sprintf("%s://%s/v2/%s/blobs/%s", repo.Scheme(), reg, repo.RepositoryStr(), digest), nil
}
