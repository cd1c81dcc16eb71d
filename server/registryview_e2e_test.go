package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/registryview"
)

// viewTags are pushed to the upstream registry as two-platform indexes;
// v1.33.5-k3s1 gets blocked, v1.35.0-k3s1 is newer than the channel's pin.
var viewTags = []string{"v1.32.9-k3s1", "v1.33.0-k3s1", "v1.33.5-k3s1", "v1.33.6-k3s1", "v1.34.1-k3s1", "v1.35.0-k3s1"}

type viewEnv struct {
	upstream string // host:port of the distribution registry
	repo     string // upstream repository
	view     string // host:port of Tidemark
	digests  map[string]string
	children map[string][]string // index digest -> platform manifest digests
}

// multiArch is a two-platform image index of small random images.
func multiArch(t *testing.T) v1.ImageIndex {
	t.Helper()
	var idx v1.ImageIndex = empty.Index
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		cf.OS, cf.Architecture = "linux", arch
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return idx
}

// startViewEnv pushes viewTags into a Debian distribution registry and
// serves a snapshot of them (the stable channel pinned to v1.34.1) with the
// registry view configured by rv.
// prep, when given, runs once the tags are pushed and before the snapshot
// is built (it may re-point a tag and its env.digests entry).
func startViewEnv(t *testing.T, rv registryview.Options, store Store, prep ...func(*viewEnv)) *viewEnv {
	t.Helper()
	ctx := context.Background()
	reg, err := distreg.Start(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	env := &viewEnv{upstream: reg.Host, repo: "rancher/k3s-upgrade", digests: map[string]string{}, children: map[string][]string{}}
	for _, tag := range viewTags {
		idx := multiArch(t)
		ref, _ := name.ParseReference(reg.Host+"/"+env.repo+":"+tag, name.Insecure)
		if err := remote.WriteIndex(ref, idx); err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
		d, _ := idx.Digest()
		env.digests[tag] = d.String()
		im, _ := idx.IndexManifest()
		for _, m := range im.Manifests {
			env.children[d.String()] = append(env.children[d.String()], m.Digest.String())
		}
	}
	for _, p := range prep {
		p(env)
	}
	src := semverSource(t, "k3s", reg.Host+"/"+env.repo)
	sd := sourceData(src, viewTags, env.digests)
	sd.Blocks = []catalog.Block{{Source: "k3s", Version: "v1.33.5+k3s1", Reason: "CVE", BlockedBy: "ops", BlockedAt: scanned}}
	chs := []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}
	states := map[string]catalog.ChannelState{"stable": {Pin: "v1.34.1+k3s1", PinDigest: env.digests["v1.34.1-k3s1"], Revision: 2, UpdatedAt: scanned}}
	snap := snapshot.New(chs, []catalog.SourceData{sd}, states, loadedAt)
	rv.Sources = []registryview.Source{{Name: "k3s", Image: reg.Host + "/" + env.repo, Insecure: true}}
	opts := Options{
		Log:          slog.New(slog.NewTextHandler(&testutil.LockedBuffer{}, nil)),
		Load:         func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		RegistryView: rv,
	}
	if store != nil {
		opts.Store = store
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	// Not through the validating recorder: it would hold a whole blob.
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	env.view = strings.TrimPrefix(ts.URL, "http://")
	return env
}

func upstreamManifest(t *testing.T, env *viewEnv, ref string) []byte {
	t.Helper()
	b, err := crane.Manifest(env.upstream+"/"+env.repo+ref, crane.Insecure)
	if err != nil {
		t.Fatalf("upstream manifest %s: %v", ref, err)
	}
	return b
}

// TestRegistryViewWithCraneAndSkopeo: the view of channel stable lists
// exactly the tags of the versions it may serve (not the blocked one, not
// the one above its pin), under channels/stable and
// channels/stable/k3s-upgrade, and crane and skopeo read manifests (index
// and children) and blobs byte-identical to the upstream's.
func TestRegistryViewWithCraneAndSkopeo(t *testing.T) {
	env := startViewEnv(t, registryview.Options{}, nil)
	want := []string{"v1.32.9-k3s1", "v1.33.0-k3s1", "v1.33.6-k3s1", "v1.34.1-k3s1"}
	for _, repo := range []string{"channels/stable", "channels/stable/k3s-upgrade"} {
		tags, err := crane.ListTags(env.view+"/"+repo, crane.Insecure)
		if err != nil || !slices.Equal(tags, want) {
			t.Errorf("crane ls %s: %v (%v), want %v", repo, tags, err, want)
		}
	}
	if tags, err := crane.ListTags(env.view+"/sources/k3s", crane.Insecure); err != nil || len(tags) != 5 || slices.Contains(tags, "v1.33.5-k3s1") {
		t.Errorf("crane ls sources/k3s: %v (%v), want every tag but the blocked one", tags, err)
	}
	ref := env.view + "/channels/stable:v1.33.6-k3s1"
	if d, err := crane.Digest(ref, crane.Insecure); err != nil || d != env.digests["v1.33.6-k3s1"] {
		t.Errorf("crane digest %s: %s (%v), want %s", ref, d, err, env.digests["v1.33.6-k3s1"])
	}
	got, err := crane.Manifest(ref, crane.Insecure)
	if err != nil || !bytes.Equal(got, upstreamManifest(t, env, ":v1.33.6-k3s1")) {
		t.Errorf("index bytes differ from the upstream's (%v)", err)
	}
	child := env.children[env.digests["v1.33.6-k3s1"]][1]
	got, err = crane.Manifest(env.view+"/channels/stable@"+child, crane.Insecure)
	if err != nil || !bytes.Equal(got, upstreamManifest(t, env, "@"+child)) {
		t.Errorf("child manifest %s: %v, or bytes differ", child, err)
	}
	// A whole pull of one platform: config and layers through the view.
	img, err := crane.Pull(ref, crane.Insecure, crane.WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	for _, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, rc)
		rc.Close()
		d, _ := l.Digest()
		if err != nil || fmt.Sprintf("sha256:%x", h.Sum(nil)) != d.String() {
			t.Errorf("layer %s through the view: %v", d, err)
		}
	}

	// What the channel may not serve is invisible: by tag and by digest.
	for _, r := range []string{":v1.33.5-k3s1", "@" + env.digests["v1.33.5-k3s1"], ":v1.35.0-k3s1", "@" + env.digests["v1.35.0-k3s1"],
		"@" + env.children[env.digests["v1.35.0-k3s1"]][0]} {
		res, body := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/manifests/"+strings.TrimLeft(r, ":@"), "", "")
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "MANIFEST_UNKNOWN") {
			t.Errorf("manifest %s: %d %s, want 404 MANIFEST_UNKNOWN", r, res.StatusCode, body)
		}
	}
	// Nor can their blobs be pulled, layer by layer, through the channel;
	// the source's view serves the newer version's (it is servable), and
	// no repository serves a digest no manifest names.
	for _, tag := range []string{"v1.33.5-k3s1", "v1.35.0-k3s1"} {
		for _, d := range blobsOf(t, env, tag) {
			res, body := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/blobs/"+d, "", "")
			if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "BLOB_UNKNOWN") {
				t.Errorf("blob %s of %s through channels/stable: %d %s, want 404 BLOB_UNKNOWN", d, tag, res.StatusCode, body)
			}
		}
	}
	if res, body := send(t, http.MethodGet, "http://"+env.view+"/v2/sources/k3s/blobs/"+blobsOf(t, env, "v1.35.0-k3s1")[1], "", ""); res.StatusCode != http.StatusOK {
		t.Errorf("a layer of v1.35.0 through sources/k3s: %d %s, want 200", res.StatusCode, body)
	}
	for _, repo := range []string{"channels/stable", "sources/k3s"} {
		res, body := send(t, http.MethodGet, "http://"+env.view+"/v2/"+repo+"/blobs/sha256:"+strings.Repeat("ab", 32), "", "")
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "BLOB_UNKNOWN") {
			t.Errorf("a digest no manifest names, through %s: %d %s, want 404 BLOB_UNKNOWN", repo, res.StatusCode, body)
		}
	}
	for _, p := range []string{"/v2/channels/nope/tags/list", "/v2/elsewhere/x/tags/list", "/v2/channels/stable/juju-db/tags/list"} {
		res, body := send(t, http.MethodGet, "http://"+env.view+p, "", "")
		if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "NAME_UNKNOWN") {
			t.Errorf("%s: %d %s, want 404 NAME_UNKNOWN", p, res.StatusCode, body)
		}
	}

	// Pagination: n and last, with a Link to the next page.
	res, body := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/tags/list?n=3", "", "")
	if link := res.Header.Get("Link"); !strings.Contains(body2str(body), `"v1.32.9-k3s1","v1.33.0-k3s1","v1.33.6-k3s1"`) ||
		link != `</v2/channels/stable/tags/list?last=v1.33.6-k3s1&n=3>; rel="next"` {
		t.Errorf("page 1: %s Link %q", body, link)
	}
	res, body = send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/tags/list?n=3&last=v1.33.6-k3s1", "", "")
	if res.Header.Get("Link") != "" || !strings.Contains(body2str(body), `"tags":["v1.34.1-k3s1"]`) {
		t.Errorf("page 2: %s Link %q", body, res.Header.Get("Link"))
	}
	if res, _ := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/tags/list?n=-1", "", ""); res.StatusCode != 400 {
		t.Errorf("n=-1: %d, want 400", res.StatusCode)
	}

	// skopeo, the real client: list-tags, inspect, copy to a directory.
	skopeo := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command("skopeo", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("skopeo %v: %v\n%s", args, err, out)
		}
		return out
	}
	var lt struct{ Tags []string }
	if err := json.Unmarshal(skopeo("list-tags", "--tls-verify=false", "docker://"+env.view+"/channels/stable"), &lt); err != nil || !slices.Equal(lt.Tags, want) {
		t.Errorf("skopeo list-tags: %v (%v)", lt.Tags, err)
	}
	if raw := skopeo("inspect", "--tls-verify=false", "--raw", "docker://"+ref); !bytes.Equal(raw, upstreamManifest(t, env, ":v1.33.6-k3s1")) {
		t.Errorf("skopeo inspect --raw differs from the upstream's index")
	}
	dir := filepath.Join(t.TempDir(), "copy")
	skopeo("copy", "--src-tls-verify=false", "--override-arch", "amd64", "--override-os", "linux", "docker://"+ref, "dir:"+dir)
	m, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil || !bytes.Equal(m, upstreamManifest(t, env, "@"+env.children[env.digests["v1.33.6-k3s1"]][0])) {
		t.Errorf("skopeo copy: manifest.json differs from the upstream's amd64 manifest (%v)", err)
	}
}

func body2str(b []byte) string { return string(b) }

// TestRegistryViewTokenAuth: with auth token, /v2/ without credentials is
// a 401 with the Basic challenge docker login answers, a token works as a
// Basic password (any user) and as a Bearer token, and a wrong one is 401.
func TestRegistryViewTokenAuth(t *testing.T) {
	pg := newPGEnv(t, Options{})
	env := startViewEnv(t, registryview.Options{Auth: "token"}, pg.st)
	base := "http://" + env.view + "/v2/"
	res, body := send(t, http.MethodGet, base, "", "")
	if res.StatusCode != 401 || res.Header.Get("WWW-Authenticate") != `Basic realm="tidemark"` || !strings.Contains(string(body), "UNAUTHORIZED") {
		t.Errorf("no credentials: %d %q %s", res.StatusCode, res.Header.Get("WWW-Authenticate"), body)
	}
	tok := pg.tokens["ci-promote"]
	if res, _ := send(t, http.MethodGet, base, "Basic "+basic("anyone", tok), ""); res.StatusCode != 200 || res.Header.Get("Docker-Distribution-API-Version") != "registry/2.0" {
		t.Errorf("Basic with a token: %d", res.StatusCode)
	}
	if res, _ := send(t, http.MethodGet, base+"channels/stable/tags/list", tok, ""); res.StatusCode != 200 {
		t.Errorf("Bearer: %d", res.StatusCode)
	}
	if res, _ := send(t, http.MethodGet, base+"channels/stable/tags/list", "Basic "+basic("x", "tdm_wrong"), ""); res.StatusCode != 401 {
		t.Errorf("a wrong token: %d, want 401", res.StatusCode)
	}
	// crane and skopeo log in the way docker login does.
	tags, err := crane.ListTags(env.view+"/channels/stable", crane.Insecure, crane.WithAuth(&authn.Basic{Username: "ci", Password: tok}))
	if err != nil || len(tags) != 4 {
		t.Errorf("crane with Basic: %v %v", tags, err)
	}
	if out, err := exec.Command("skopeo", "list-tags", "--tls-verify=false", "--creds", "ci:"+tok, "docker://"+env.view+"/channels/stable").CombinedOutput(); err != nil || !strings.Contains(string(out), "v1.34.1-k3s1") {
		t.Errorf("skopeo --creds: %v\n%s", err, out)
	}
	if out, err := exec.Command("skopeo", "list-tags", "--tls-verify=false", "docker://"+env.view+"/channels/stable").CombinedOutput(); err == nil {
		t.Errorf("skopeo without credentials listed tags:\n%s", out)
	}
}

func basic(user, pw string) string {
	return strings.TrimPrefix(authHeader(user, pw), "Basic ")
}

func authHeader(user, pw string) string {
	req, _ := http.NewRequest(http.MethodGet, "http://x", nil)
	req.SetBasicAuth(user, pw)
	return req.Header.Get("Authorization")
}

// TestRegistryViewServesABlobBeforeItsManifest: after a restart the cache
// is empty; a client that already holds the manifest asks for a layer
// first, and gets it (the view reads the listed manifests once).
func TestRegistryViewServesABlobBeforeItsManifest(t *testing.T) {
	env := startViewEnv(t, registryview.Options{}, nil)
	layer := blobsOf(t, env, "v1.33.0-k3s1")[1]
	if res, body := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/blobs/"+layer, "", ""); res.StatusCode != http.StatusOK {
		t.Fatalf("a listed version's layer on a cold cache: %d %s, want 200", res.StatusCode, body)
	}
	if res, _ := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/blobs/"+blobsOf(t, env, "v1.33.5-k3s1")[1], "", ""); res.StatusCode != http.StatusNotFound {
		t.Fatalf("the blocked version's layer after warming: %d, want 404", res.StatusCode)
	}
}

// TestRegistryViewManifestCache: a second pull of the same manifest costs
// the upstream nothing.
func TestRegistryViewManifestCache(t *testing.T) {
	env := startViewEnv(t, registryview.Options{}, nil)
	ref := env.view + "/channels/stable:v1.34.1-k3s1"
	for range 3 {
		if _, err := crane.Manifest(ref, crane.Insecure); err != nil {
			t.Fatal(err)
		}
	}
	res, body := send(t, http.MethodGet, "http://"+env.view+"/metrics", "", "")
	if res.StatusCode != 200 {
		t.Fatal(res.StatusCode)
	}
	for _, want := range []string{`tidemark_registry_view_manifest_cache_total{result="hit"} 2`, `tidemark_registry_view_manifest_cache_total{result="miss"} 1`,
		`tidemark_registry_view_upstream_requests_total{kind="manifest"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestRegistryViewPassthroughAndRedirect: with passthrough, another name
// under a channel (juju pulls juju-db beside jujud-operator) is the
// upstream's, unfiltered; with blobs: redirect a blob is a 307 to the
// upstream registry.
func TestRegistryViewPassthroughAndRedirect(t *testing.T) {
	env := startViewEnv(t, registryview.Options{Passthrough: true, Blobs: "redirect"}, nil)
	if _, err := distreg.Push(context.Background(), env.upstream, "rancher/juju-db", []string{"4.4", "5.0"}, 1); err != nil {
		t.Fatal(err)
	}
	tags, err := crane.ListTags(env.view+"/channels/stable/juju-db", crane.Insecure)
	slices.Sort(tags) // the upstream's order, passed through
	if err != nil || !slices.Equal(tags, []string{"4.4", "5.0"}) {
		t.Errorf("passthrough tags: %v (%v)", tags, err)
	}
	got, err := crane.Manifest(env.view+"/channels/stable/juju-db:5.0", crane.Insecure)
	if err != nil || !bytes.Equal(got, upstreamManifestOf(t, env.upstream+"/rancher/juju-db:5.0")) {
		t.Errorf("passthrough manifest differs (%v)", err)
	}
	d := blobsOf(t, env, "v1.34.1-k3s1")[0]
	res, _ := send(t, http.MethodGet, "http://"+env.view+"/v2/channels/stable/blobs/"+d, "", "")
	if want := "http://" + env.upstream + "/v2/" + env.repo + "/blobs/" + d; res.StatusCode != http.StatusTemporaryRedirect || res.Header.Get("Location") != want {
		t.Errorf("blob with redirect: %d %q, want 307 to %s", res.StatusCode, res.Header.Get("Location"), want)
	}
	// Following the redirect, as a client does, gets the blob.
	if _, err := crane.Pull(env.view+"/channels/stable:v1.34.1-k3s1", crane.Insecure); err != nil {
		t.Errorf("pull through redirects: %v", err)
	}
}

// blobsOf are the config and layer digests of tag's first platform
// manifest upstream.
func blobsOf(t *testing.T, env *viewEnv, tag string) []string {
	t.Helper()
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	child := env.children[env.digests[tag]][0]
	if err := json.Unmarshal(upstreamManifest(t, env, "@"+child), &m); err != nil {
		t.Fatal(err)
	}
	out := []string{m.Config.Digest}
	for _, l := range m.Layers {
		out = append(out, l.Digest)
	}
	return out
}

func upstreamManifestOf(t *testing.T, ref string) []byte {
	t.Helper()
	b, err := crane.Manifest(ref, crane.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegistryViewStreamsABigBlob: a 200 MB layer goes through the view
// streamed: the process grows by less than 50 MB while it passes.
func TestRegistryViewStreamsABigBlob(t *testing.T) {
	const size = 200 << 20
	var digest string
	// The blob is a layer of v1.32.9's image, so that channel stable may
	// serve it.
	env := startViewEnv(t, registryview.Options{}, nil, func(env *viewEnv) {
		digest = pushZeros(t, "http://"+env.upstream, env.repo, size)
		env.digests["v1.32.9-k3s1"] = pushImageOf(t, env, "v1.32.9-k3s1", digest, size)
	})
	runtime.GC()
	base := rss(t)
	res, err := http.Get("http://" + env.view + "/v2/channels/stable/blobs/" + digest)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.ContentLength != size {
		t.Fatalf("blob: %d, Content-Length %d", res.StatusCode, res.ContentLength)
	}
	h := sha256.New()
	peak := base
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := res.Body.Read(buf)
		h.Write(buf[:k])
		n += int64(k)
		if n%(10<<20) < int64(k) {
			peak = max(peak, rss(t))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprintf("sha256:%x", h.Sum(nil)); n != size || got != digest {
		t.Fatalf("read %d bytes with digest %s, want %d with %s", n, got, size, digest)
	}
	growth := (peak - base) >> 20
	t.Logf("streamed %d MB: RSS %d MB before, peak %d MB (+%d MB)", size>>20, base>>20, peak>>20, growth)
	if growth >= 50 {
		t.Errorf("RSS grew %d MB while a %d MB blob passed, want under 50", growth, size>>20)
	}
}

// pushZeros uploads size zero bytes as one blob (monolithic upload,
// streamed: nothing holds the blob in memory) and returns its digest.
func pushZeros(t *testing.T, registry, repo string, size int64) string {
	t.Helper()
	h := sha256.New()
	if _, err := io.CopyN(h, zeros{}, size); err != nil {
		t.Fatal(err)
	}
	digest := fmt.Sprintf("sha256:%x", h.Sum(nil))
	res, err := http.Post(registry+"/v2/"+repo+"/blobs/uploads/", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc := res.Header.Get("Location")
	if !strings.HasPrefix(loc, "http") {
		loc = registry + loc
	}
	sep := "?"
	if strings.Contains(loc, "?") {
		sep = "&"
	}
	req, _ := http.NewRequest(http.MethodPut, loc+sep+"digest="+digest, io.LimitReader(zeros{}, size))
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("upload: %s", res.Status)
	}
	return digest
}

// pushImageOf pushes an image manifest as tag whose one layer is blob
// layer (already uploaded), with a small config; it returns its digest.
func pushImageOf(t *testing.T, env *viewEnv, tag, layer string, size int64) string {
	t.Helper()
	cfg := static.NewLayer([]byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}`), types.OCIConfigJSON)
	repo, _ := name.NewRepository(env.upstream+"/"+env.repo, name.Insecure)
	if err := remote.WriteLayer(repo, cfg); err != nil {
		t.Fatal(err)
	}
	cd, _ := cfg.Digest()
	cs, _ := cfg.Size()
	m := fmt.Sprintf(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",`+
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":%q,"size":%d},`+
		`"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":%q,"size":%d}]}`, cd, cs, layer, size)
	req, _ := http.NewRequest(http.MethodPut, "http://"+env.upstream+"/v2/"+env.repo+"/manifests/"+tag, strings.NewReader(m))
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("push manifest %s: %s", tag, res.Status)
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(m)))
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// rss is this process's resident set in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
