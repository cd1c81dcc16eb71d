// Package registryview serves channels and sources as read-only OCI
// registry repositories under /v2/ (CONTRACT section 14), so that every
// registry client (juju's caas-image-repo, Flux's image-reflector,
// argocd-image-updater, Keel, Renovate's docker datasource, crane, skopeo)
// sees only what a channel may serve, with the upstream's bytes and
// digests.
//
// Tags come from the snapshot, never from the upstream: listing a channel
// costs the upstream nothing. Manifests are fetched by the digest Tidemark
// indexed (so a re-tag upstream serves nothing Tidemark has not gated)
// and cached by digest in memory; blobs are streamed from the upstream
// with the source's credentials, or redirected to it.
package registryview

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Options configures a View.
type Options struct {
	// Auth is "none" or "token" (config.RegistryView).
	Auth string
	// Authenticate checks a token for Auth "token" (any scope reads);
	// errors wrapping resolver.ErrUnauthorized are answered 401.
	Authenticate func(c echo.Context, token string) error
	// Blobs is "stream" or "redirect".
	Blobs       string
	Passthrough bool
	Sources     []Source
	Snapshot    func() *snapshot.Snapshot
	// Keychain finds credentials for sources without a password; nil:
	// anonymous.
	Keychain authn.Keychain
	// Transport reaches upstream registries; nil: http.DefaultTransport.
	Transport http.RoundTripper
	// CacheBytes bounds the manifest cache; 0: 64 MiB.
	CacheBytes int
	// Observe counts view events: ("cache", "hit"|"miss"),
	// ("upstream", "manifest"|"blob"). nil: none.
	Observe func(kind, value string)
	// WriteIdle bounds how long a blob's client may take to accept each
	// chunk; the server's write timeout does not apply to blobs. 0: 60s.
	WriteIdle time.Duration
	// Active is, per channel, the versions the fleet says it last
	// answered active clusters, and their generation (a channel's served
	// set keeps them); nil: none.
	Active func(channel string) ([]string, uint64)
}

// View is the registry view.
type View struct {
	listings atomic.Pointer[listings]
	opts     Options
	sources  map[string]*Source
	up       *upstream
	cache    *manifestCache
}

// New makes a view; Register adds its routes.
func New(opts Options) *View {
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 64 << 20
	}
	if opts.WriteIdle <= 0 {
		opts.WriteIdle = 60 * time.Second
	}
	if opts.Transport == nil {
		opts.Transport = http.DefaultTransport
	}
	v := &View{opts: opts, sources: map[string]*Source{}, cache: newManifestCache(opts.CacheBytes)}
	for i := range opts.Sources {
		v.sources[opts.Sources[i].Name] = &opts.Sources[i]
	}
	v.up = &upstream{base: opts.Transport, keychain: opts.Keychain, requests: func(kind string) { v.observe("upstream", kind) }}
	return v
}

func (v *View) observe(kind, value string) {
	if v.opts.Observe != nil {
		v.opts.Observe(kind, value)
	}
}

// Register adds the /v2/ routes: the base, and tags, manifests and blobs
// of channels/<channel> and sources/<source>, each also under
// <repo>/<image name>.
func (v *View) Register(e *echo.Echo) {
	get := func(p string, h echo.HandlerFunc) { e.Match([]string{http.MethodGet, http.MethodHead}, p, v.auth(h)) }
	get("/v2/", v.base)
	get("/v2", v.base)
	for _, kind := range []string{"channels", "sources"} {
		for _, repo := range []string{"/v2/" + kind + "/:repo", "/v2/" + kind + "/:repo/:image"} {
			get(repo+"/tags/list", v.tags)
			get(repo+"/manifests/:ref", v.manifest)
			get(repo+"/blobs/:digest", v.blob)
		}
	}
	// Anything else under /v2/ is a repository the view does not have.
	e.Any("/v2/*", v.auth(func(c echo.Context) error {
		return distError(c, http.StatusNotFound, "NAME_UNKNOWN", "repository name not known to registry: the view serves channels/<channel> and sources/<source>", c.Request().URL.Path)
	}))
}

// auth checks credentials when Auth is token: Basic with a token as the
// password (docker login) or Bearer.
func (v *View) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Docker-Distribution-API-Version", "registry/2.0")
		if v.opts.Auth != "token" {
			return next(c)
		}
		tok := credential(c.Request())
		if tok == "" {
			return unauthorized(c, "authentication required: docker login with any user name and a Tidemark token as the password, or send Authorization: Bearer <token>")
		}
		if err := v.opts.Authenticate(c, tok); err != nil {
			if errors.Is(err, resolver.ErrUnauthorized) || errors.Is(err, resolver.ErrForbidden) {
				return unauthorized(c, err.Error())
			}
			return err // a 429 or a 503: the server's error table answers
		}
		return next(c)
	}
}

func credential(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok {
		return ""
	}
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return rest
	case strings.EqualFold(scheme, "Basic"):
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return ""
		}
		_, pw, _ := strings.Cut(string(b), ":")
		return pw
	}
	return ""
}

func unauthorized(c echo.Context, msg string) error {
	c.Response().Header().Set("WWW-Authenticate", `Basic realm="tidemark"`)
	return distError(c, http.StatusUnauthorized, "UNAUTHORIZED", msg, nil)
}

// distError answers in the distribution API's error shape.
func distError(c echo.Context, status int, code, msg string, detail any) error {
	type e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Detail  any    `json:"detail,omitempty"`
	}
	return c.JSON(status, struct {
		Errors []e `json:"errors"`
	}{[]e{{code, msg, detail}}})
}

func (v *View) base(c echo.Context) error {
	return c.JSON(http.StatusOK, struct{}{})
}

// repo is one request's repository: its name, the source behind it, and
// its registry tags (nil for a passthrough name: unfiltered upstream).
type repo struct {
	name  string
	src   *Source
	other string   // a passthrough name beside the source's image; "" for the source's own
	list  *listing // nil for a passthrough name
}

// listing is one channel's or source's registry tags in one snapshot,
// ready to answer from: computed once per snapshot (a channel of 10,000
// versions costs milliseconds to list and sort), then map lookups.
type listing struct {
	tags    []snapshot.RegistryTag // by name
	byName  map[string]int
	digests map[string]bool
	// warm: every manifest of the listing was read into the cache once
	// (allowedBlob), so a blob no cached manifest names is not probed for.
	warm atomic.Bool
	// body is the whole tags/list answer, by repository name asked.
	mu   sync.Mutex
	body map[string][]byte
}

func newListing(tags []snapshot.RegistryTag) *listing {
	l := &listing{tags: tags, byName: make(map[string]int, len(tags)), digests: map[string]bool{}, body: map[string][]byte{}}
	for i, t := range tags {
		l.byName[t.Name] = i
		if t.Digest != "" {
			l.digests[t.Digest] = true
		}
	}
	return l
}

// listings are the listings of one snapshot and one generation of the
// fleet's active versions, by "channels/<c>" or "sources/<s>"; a new
// snapshot, or new active versions, start afresh.
type listings struct {
	snap *snapshot.Snapshot
	gen  uint64 // of the fleet's active versions
	mu   sync.Mutex
	m    map[string]*listing
}

// listingOf is kind/name's listing in snap, computed at most once.
func (v *View) listingOf(snap *snapshot.Snapshot, kind, name string) (*listing, error) {
	var active []string
	var gen uint64
	if kind == "channels" && v.opts.Active != nil {
		active, gen = v.opts.Active(name)
	}
	ls := v.listings.Load()
	if ls == nil || ls.snap != snap || ls.gen != gen && kind == "channels" {
		fresh := &listings{snap: snap, gen: gen, m: map[string]*listing{}}
		if v.listings.CompareAndSwap(ls, fresh) {
			ls = fresh
		} else {
			ls = v.listings.Load()
		}
	}
	key := kind + "/" + name
	ls.mu.Lock()
	l, ok := ls.m[key]
	ls.mu.Unlock()
	if ok {
		return l, nil
	}
	var tags []snapshot.RegistryTag
	var err error
	if kind == "channels" {
		// A served set moves with time (a rollout completing): a listing
		// is kept one snapshot and one fleet generation.
		tags, err = snap.ChannelRegistryTags(name, active, time.Now())
	} else {
		tags, err = snap.SourceRegistryTags(name)
	}
	if err != nil {
		return nil, err
	}
	l = newListing(tags)
	ls.mu.Lock()
	if len(ls.m) < maxListings {
		ls.m[key] = l
	}
	ls.mu.Unlock()
	return l, nil
}

// maxListings bounds the listings kept per snapshot (configured channels
// and sources, so only a flood of unknown names could pass it, and those
// fail before a listing is made).
const maxListings = 4096

// resolve finds the request's repository; ok false when it has answered
// (an unknown name).
func (v *View) resolve(c echo.Context) (*repo, bool, error) {
	snap := v.opts.Snapshot()
	if snap == nil {
		return nil, false, fmt.Errorf("%w: no snapshot loaded yet", resolver.ErrUnavailable)
	}
	kind := strings.Split(strings.TrimPrefix(c.Path(), "/v2/"), "/")[0]
	name, image := c.Param("repo"), c.Param("image")
	r := &repo{name: kind + "/" + name}
	source := name
	if kind == "channels" {
		if a, err := snap.Channel(name); err == nil {
			source = a.Channel.Source
		}
	}
	var err error
	if v.sources[source] != nil {
		r.list, err = v.listingOf(snap, kind, name)
	}
	if err != nil || v.sources[source] == nil {
		return nil, false, distError(c, http.StatusNotFound, "NAME_UNKNOWN", fmt.Sprintf("repository %s is not known: no %s %q", r.name+suffix(image), strings.TrimSuffix(kind, "s"), name), nil)
	}
	r.src = v.sources[source]
	if image != "" {
		r.name += "/" + image
		if own := path.Base(r.src.Image); image != own {
			if !v.opts.Passthrough {
				return nil, false, distError(c, http.StatusNotFound, "NAME_UNKNOWN",
					fmt.Sprintf("repository %s is not known: the image here is %s (registry_view passthrough is off)", r.name, own), nil)
			}
			r.other, r.list = image, nil
		}
	}
	return r, true, nil
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return "/" + s
}

var tagGrammar = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

func (v *View) tags(c echo.Context) error {
	r, ok, err := v.resolve(c)
	if !ok {
		return err
	}
	if r.other != "" {
		return v.proxyTags(c, r)
	}
	q := c.QueryParams()
	n := -1
	if s := q.Get("n"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 0 {
			return distError(c, http.StatusBadRequest, "PAGINATION_NUMBER_INVALID", fmt.Sprintf("n %q is not a number of tags", s), nil)
		}
	}
	last := q.Get("last")
	if n < 0 && last == "" {
		return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, r.list.whole(r.name))
	}
	tags := r.list.tags
	if last != "" {
		tags = tags[sort.Search(len(tags), func(i int) bool { return tags[i].Name > last }):]
	}
	if n >= 0 && n < len(tags) {
		tags = tags[:n]
		if n > 0 {
			next := url.Values{"n": {strconv.Itoa(n)}, "last": {tags[n-1].Name}}
			c.Response().Header().Set("Link", fmt.Sprintf(`</v2/%s/tags/list?%s>; rel="next"`, r.name, next.Encode()))
		}
	}
	names := make([]string, len(tags))
	for i, t := range tags {
		names[i] = t.Name
	}
	return c.JSON(http.StatusOK, tagList{r.name, names})
}

type tagList struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

// whole is the tags/list answer of every tag, encoded once per name.
func (l *listing) whole(name string) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.body[name]; ok {
		return b
	}
	names := make([]string, len(l.tags))
	for i, t := range l.tags {
		names[i] = t.Name
	}
	b, _ := json.Marshal(tagList{name, names}) // strings only: cannot fail
	l.body[name] = b
	return b
}

// proxyTags lists a passthrough repository's tags from the upstream.
func (v *View) proxyTags(c echo.Context, r *repo) error {
	ctx := c.Request().Context()
	res, _, err := v.up.do(ctx, r.src, r.other, http.MethodGet, "tags", "list?"+c.QueryString(), nil)
	if err != nil {
		return upstreamFailed(c, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return upstreamFailed(c, &upstreamError{status: res.StatusCode, msg: fmt.Sprintf("upstream answered %s for the tags of %s", res.Status, r.other)})
	}
	if l := res.Header.Get("Link"); l != "" {
		// The upstream's next page, under this view's name.
		if i, j := strings.Index(l, "?"), strings.Index(l, ">"); i >= 0 && j > i {
			c.Response().Header().Set("Link", fmt.Sprintf("</v2/%s/tags/list%s", r.name, l[i:]))
		}
	}
	// The answer names the repository asked for, not the upstream's.
	var list struct {
		Tags []string `json:"tags"`
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, maxUpstreamTags)).Decode(&list); err != nil {
		return upstreamFailed(c, &upstreamError{status: http.StatusBadGateway, msg: fmt.Sprintf("upstream tags of %s: not a tag list of at most %d bytes: %v", r.other, maxUpstreamTags, err)})
	}
	if list.Tags == nil {
		list.Tags = []string{}
	}
	return c.JSON(http.StatusOK, tagList{r.name, list.Tags})
}

// maxUpstreamTags bounds a passthrough tag list read from upstream.
const maxUpstreamTags = 16 << 20

func upstreamFailed(c echo.Context, err error) error {
	var ue *upstreamError
	if errors.As(err, &ue) {
		switch {
		case ue.status == http.StatusNotFound:
			return distError(c, http.StatusNotFound, "NAME_UNKNOWN", ue.msg, nil)
		case ue.status == http.StatusTooManyRequests:
			return distError(c, http.StatusTooManyRequests, "TOOMANYREQUESTS", ue.msg, nil)
		}
		return distError(c, http.StatusServiceUnavailable, "UNAVAILABLE", ue.msg, nil)
	}
	return distError(c, http.StatusServiceUnavailable, "UNAVAILABLE", err.Error(), nil)
}
