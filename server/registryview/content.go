package registryview

// Manifests and blobs: bytes and digests exactly the upstream's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

var digestGrammar = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

func (v *View) manifest(c echo.Context) error {
	r, ok, err := v.resolve(c)
	if !ok {
		return err
	}
	ref := c.Param("ref")
	ctx := c.Request().Context()
	var m *Manifest
	switch {
	case r.other != "":
		m, err = v.fetch(ctx, r, ref)
	case digestGrammar.MatchString(ref):
		if !v.allowedDigest(ctx, r, ref) {
			return distError(c, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("manifest %s is not in %s", ref, r.name), nil)
		}
		m, err = v.fetch(ctx, r, ref)
	case tagGrammar.MatchString(ref):
		i, ok := r.list.byName[ref]
		if !ok {
			return distError(c, http.StatusNotFound, "MANIFEST_UNKNOWN", fmt.Sprintf("tag %s is not in %s: it is not a version %s may serve now", ref, r.name, r.name), nil)
		}
		// By the digest Tidemark indexed (and gated), not by tag: a
		// re-tag upstream serves nothing until Tidemark has seen it.
		want := r.list.tags[i].Digest
		if want == "" {
			want = ref
		}
		m, err = v.fetch(ctx, r, want)
	default:
		return distError(c, http.StatusBadRequest, "MANIFEST_INVALID", fmt.Sprintf("reference %q is neither a tag nor a sha256 digest", ref), nil)
	}
	if err != nil {
		var ue *upstreamError
		if errors.As(err, &ue) && ue.status == http.StatusNotFound {
			return distError(c, http.StatusNotFound, "MANIFEST_UNKNOWN", ue.msg, nil)
		}
		return upstreamFailed(c, err)
	}
	h := c.Response().Header()
	h.Set("Content-Type", m.MediaType)
	h.Set("Docker-Content-Digest", m.Digest)
	h.Set("Content-Length", strconv.Itoa(len(m.Body)))
	h.Set("ETag", `"`+m.Digest+`"`)
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err = c.Response().Write(m.Body)
	return err
}

// fetch is a manifest through the cache (by digest; a tag always asks).
func (v *View) fetch(ctx context.Context, r *repo, ref string) (*Manifest, error) {
	key := r.src.Name + suffix(r.other)
	if digestGrammar.MatchString(ref) {
		if m, ok := v.cache.get(key, ref); ok {
			v.observe("cache", "hit")
			return m, nil
		}
		v.observe("cache", "miss")
	}
	m, err := v.up.manifest(ctx, r.src, r.other, ref)
	if err != nil {
		return nil, err
	}
	v.cache.put(key, m)
	return m, nil
}

// maxIndexProbe bounds how many listed manifests a request for an unknown
// child digest reads to find its index (after a restart emptied the cache).
const maxIndexProbe = 32

// allowedDigest reports whether digest is a listed tag's, or a child of a
// listed tag's index.
func (v *View) allowedDigest(ctx context.Context, r *repo, digest string) bool {
	listed := r.list.digests
	if listed[digest] {
		return true
	}
	for _, p := range v.cache.parentsOf(r.src.Name, digest) {
		if listed[p] {
			return true
		}
	}
	// Not known: read the listed indexes, newest tags first, until one
	// names it.
	probed := 0
	for i := len(r.list.tags) - 1; i >= 0 && probed < maxIndexProbe; i-- {
		d := r.list.tags[i].Digest
		if d == "" {
			continue
		}
		if _, ok := v.cache.get(r.src.Name, d); ok {
			continue // its children are already known, and not this one
		}
		probed++
		m, err := v.fetch(ctx, r, d)
		if err == nil && slices.Contains(childDigests(m), digest) {
			return true
		}
	}
	return false
}

// allowedBlob reports whether a manifest r may serve (a listed tag's, or
// a child of a listed index) names digest as its config or a layer. A
// client reads the manifest before its blobs, so the cache knows the
// manifest; after a restart (or an eviction) the listed manifests are
// read once, newest first, at most maxIndexProbe of them a request, until
// the listing's every manifest is cached (warm) and an unknown digest
// costs nothing more.
func (v *View) allowedBlob(ctx context.Context, r *repo, digest string) bool {
	if v.namedBy(r, digest) {
		return true
	}
	if r.list.warm.Load() {
		return false
	}
	probed, complete := 0, true
	for i := len(r.list.tags) - 1; i >= 0; i-- {
		d := r.list.tags[i].Digest
		if d == "" {
			continue
		}
		for _, md := range append([]string{d}, v.cachedChildren(r, d)...) {
			if _, ok := v.cache.get(r.src.Name, md); ok {
				continue
			}
			if probed >= maxIndexProbe {
				return v.namedBy(r, digest)
			}
			probed++
			m, err := v.fetch(ctx, r, md)
			if err != nil {
				complete = false
				continue
			}
			for _, ch := range childDigests(m) {
				if probed >= maxIndexProbe {
					return v.namedBy(r, digest)
				}
				if _, ok := v.cache.get(r.src.Name, ch); !ok {
					probed++
					if _, err := v.fetch(ctx, r, ch); err != nil {
						complete = false
					}
				}
			}
		}
	}
	if complete {
		r.list.warm.Store(true)
	}
	return v.namedBy(r, digest)
}

// cachedChildren are the children of index d when it is cached.
func (v *View) cachedChildren(r *repo, d string) []string {
	if m, ok := v.cache.get(r.src.Name, d); ok {
		return childDigests(m)
	}
	return nil
}

// namedBy reports whether a cached manifest that r may serve names blob
// digest.
func (v *View) namedBy(r *repo, digest string) bool {
	listed := r.list.digests
	for _, m := range v.cache.ownersOf(r.src.Name, digest) {
		if listed[m] {
			return true
		}
		for _, p := range v.cache.parentsOf(r.src.Name, m) {
			if listed[p] {
				return true
			}
		}
	}
	return false
}

func (v *View) blob(c echo.Context) error {
	r, ok, err := v.resolve(c)
	if !ok {
		return err
	}
	digest := c.Param("digest")
	if !digestGrammar.MatchString(digest) {
		return distError(c, http.StatusBadRequest, "DIGEST_INVALID", fmt.Sprintf("digest %q is not sha256:<64 hex>", digest), nil)
	}
	if r.other == "" && !v.allowedBlob(c.Request().Context(), r, digest) {
		return distError(c, http.StatusNotFound, "BLOB_UNKNOWN",
			fmt.Sprintf("blob %s is not in %s: no manifest it may serve names it", digest, r.name), nil)
	}
	if v.opts.Blobs == "redirect" {
		u, err := v.up.blobURL(r.src, r.other, digest)
		if err != nil {
			return err
		}
		return c.Redirect(http.StatusTemporaryRedirect, u)
	}
	ctx := c.Request().Context()
	res, err := v.up.blob(ctx, r.src, r.other, c.Request().Method, digest)
	if err != nil {
		var ue *upstreamError
		if errors.As(err, &ue) && ue.status == http.StatusNotFound {
			return distError(c, http.StatusNotFound, "BLOB_UNKNOWN", ue.msg, nil)
		}
		return upstreamFailed(c, err)
	}
	defer res.Body.Close()
	h := c.Response().Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Docker-Content-Digest", digest)
	if res.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(res.ContentLength, 10))
	}
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	// The server's write timeout bounds a whole answer; a blob of
	// gigabytes takes longer. Each chunk gets WriteIdle instead, so a
	// client that stops reading is still dropped.
	rc := http.NewResponseController(c.Response().Writer)
	w := &idleWriter{w: c.Response(), rc: rc, idle: v.opts.WriteIdle}
	buf := make([]byte, 64<<10)
	_, err = io.CopyBuffer(w, res.Body, buf)
	return err
}

type idleWriter struct {
	w    io.Writer
	rc   *http.ResponseController
	idle time.Duration
}

func (w *idleWriter) Write(p []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle)) // unsupported by a test recorder: then the server's applies
	return w.w.Write(p)
}
