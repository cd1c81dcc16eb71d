package indexer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// testRegistry is go-containerregistry's in-process registry behind a handler
// that adds what it lacks (Link pagination, token auth) and injects faults.
type testRegistry struct {
	t     *testing.T
	srv   *httptest.Server
	inner http.Handler
	host  string

	mu       sync.Mutex
	pageSize int    // > 0: tag lists are cut into pages of this size with Link headers
	token    string // != "": bearer token auth with this token
	user     string // with token: the token endpoint wants these basic credentials
	password string
	// fault sees every request first; returning true means it answered.
	fault func(w http.ResponseWriter, r *http.Request) bool

	manifests atomic.Int64 // manifest requests (GET/HEAD) that reached the registry
	lists     atomic.Int64 // tag list requests that reached the registry
	tokens    atomic.Int64 // token requests
	img       v1.Image
}

func newTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{t: t, inner: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

func (r *testRegistry) set(f func(r *testRegistry)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

func (r *testRegistry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	fault, pageSize, token, user, password := r.fault, r.pageSize, r.token, r.user, r.password
	r.mu.Unlock()
	if fault != nil && fault(w, req) {
		return
	}
	if req.URL.Path == "/token" {
		r.tokens.Add(1)
		if u, p, _ := req.BasicAuth(); user != "" && (u != user || p != password) {
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"token": token})
		return
	}
	if token != "" && req.Header.Get("Authorization") != "Bearer "+token {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="test"`, r.srv.URL))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
		return
	}
	switch {
	case strings.Contains(req.URL.Path, "/manifests/"):
		if req.Method == http.MethodGet || req.Method == http.MethodHead {
			r.manifests.Add(1)
		}
	case strings.HasSuffix(req.URL.Path, "/tags/list"):
		r.lists.Add(1)
		if pageSize > 0 {
			r.servePage(w, req, pageSize)
			return
		}
	}
	r.inner.ServeHTTP(w, req)
}

// servePage cuts the inner registry's full list into pages like the
// distribution registry does: ?n=&last= in, Link: <next>; rel="next" out.
func (r *testRegistry) servePage(w http.ResponseWriter, req *http.Request, size int) {
	all := r.allTags(req.URL.Path)
	if all == nil {
		r.inner.ServeHTTP(w, req)
		return
	}
	if n, err := strconv.Atoi(req.URL.Query().Get("n")); err == nil && n > 0 && n < size {
		size = n
	}
	last := req.URL.Query().Get("last")
	start := sort.SearchStrings(all, last)
	if start < len(all) && all[start] == last {
		start++
	}
	page := all[start:min(start+size, len(all))]
	if start+size < len(all) {
		q := url.Values{"n": {strconv.Itoa(size)}, "last": {page[len(page)-1]}}
		w.Header().Set("Link", fmt.Sprintf(`<%s?%s>; rel="next"`, req.URL.Path, q.Encode()))
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"name": "x", "tags": page})
}

func (r *testRegistry) allTags(path string) []string {
	rec := httptest.NewRecorder()
	r.inner.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		return nil
	}
	var body struct{ Tags []string }
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		r.t.Errorf("inner tag list: %v", err)
		return nil
	}
	sort.Strings(body.Tags)
	return body.Tags
}

// push writes one small random image to repo and points each tag at it,
// bypassing faults and auth (straight to the inner registry).
func (r *testRegistry) push(repo string, tags ...string) v1.Hash {
	r.t.Helper()
	if r.img == nil {
		img, err := random.Image(256, 1)
		if err != nil {
			r.t.Fatal(err)
		}
		r.img = img
	}
	return r.pushImage(r.img, repo, tags...)
}

func (r *testRegistry) pushImage(img v1.Image, repo string, tags ...string) v1.Hash {
	r.t.Helper()
	inner := httptest.NewServer(r.inner)
	defer inner.Close()
	ref, err := name.ParseReference(strings.TrimPrefix(inner.URL, "http://") + "/" + repo + ":" + tags[0])
	if err != nil {
		r.t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		r.t.Fatalf("pushing %s: %v", ref, err)
	}
	raw, _ := img.RawManifest()
	mt, _ := img.MediaType()
	for _, tag := range tags[1:] {
		req, _ := http.NewRequest(http.MethodPut, inner.URL+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(raw))
		req.Header.Set("Content-Type", string(mt))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			r.t.Fatalf("tagging %s:%s: %s", repo, tag, resp.Status)
		}
	}
	d, _ := img.Digest()
	return d
}

// untag deletes tags straight from the inner registry.
func (r *testRegistry) untag(repo string, tags ...string) {
	r.t.Helper()
	for _, tag := range tags {
		rec := httptest.NewRecorder()
		r.inner.ServeHTTP(rec, httptest.NewRequest(http.MethodDelete, "/v2/"+repo+"/manifests/"+tag, nil))
		if rec.Code/100 != 2 {
			r.t.Fatalf("untag %s:%s: %d %s", repo, tag, rec.Code, rec.Body)
		}
	}
}
