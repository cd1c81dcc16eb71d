package indexer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// pingTTL is how long a registry's answer to the authentication ping is
// reused. The answer (anonymous, or which Basic or Bearer challenge) changes
// only when the registry's operators change its authentication; a scan that
// fails forgets it (pingCache.forget), so a change costs one failed scan.
const pingTTL = 10 * time.Minute

// pingCache remembers each registry's answer to GET /v2/, the ping with
// which go-containerregistry starts every handshake. Without it every scan,
// push and gate check pinged first: a round trip per source per scan (1,000
// pings for 1,000 sources on one registry), and for an insecure registry a
// TLS attempt as well, which fails the same way every time. The ping is made
// without credentials, so one answer serves every source of the registry.
type pingCache struct {
	mu  sync.Mutex
	m   map[string]pingAnswer // "scheme://host"
	now func() time.Time
}

// pingAnswer is a ping's outcome: a response (200 or 401 with its
// challenge) or a TLS record error (an http:// registry asked over https).
type pingAnswer struct {
	status int
	header http.Header
	err    error
	at     time.Time
	// anonymousOnly marks a 200 that a probe got for one repository
	// without credentials: it says nothing of what a source with
	// credentials should send (the registry's /v2/ may want a token).
	anonymousOnly bool
}

func newPingCache() *pingCache {
	return &pingCache{m: map[string]pingAnswer{}, now: time.Now}
}

// forget drops what is known of host's pings (both schemes).
func (c *pingCache) forget(host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, "https://"+host)
	delete(c.m, "http://"+host)
}

func (c *pingCache) get(key string) (pingAnswer, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.m[key]
	if ok && c.now().Sub(a.at) >= pingTTL {
		delete(c.m, key)
		return pingAnswer{}, false
	}
	return a, ok
}

func (c *pingCache) put(key string, a pingAnswer) {
	a.at = c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = a
}

// pingTransport answers a ping from the cache and records the ones it lets
// through. It wraps the scan's whole transport (counting, rate limit,
// retries), so that an answered ping is neither a request nor a token.
type pingTransport struct {
	next      http.RoundTripper
	cache     *pingCache
	anonymous bool // the scan has no credentials
}

func (t *pingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Path != "/v2/" {
		return t.next.RoundTrip(req)
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	if a, ok := t.cache.get(key); ok && (t.anonymous || !a.anonymousOnly) {
		if a.err != nil {
			return nil, a.err
		}
		return &http.Response{
			Status: http.StatusText(a.status), StatusCode: a.status,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: a.header.Clone(), Body: io.NopCloser(bytes.NewReader(nil)),
			Request: req,
		}, nil
	}
	res, err := t.next.RoundTrip(req)
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &rec):
		// The registry speaks plain HTTP: an https ping fails so every time.
		t.cache.put(key, pingAnswer{err: err})
	case err == nil && (res.StatusCode == http.StatusOK || res.StatusCode == http.StatusUnauthorized) &&
		res.Request != nil && res.Request.URL.Scheme+"://"+res.Request.URL.Host == key:
		// Not after a redirect elsewhere: the answer must be this address's.
		t.cache.put(key, pingAnswer{status: res.StatusCode, header: http.Header{"Www-Authenticate": res.Header.Values("WWW-Authenticate")}})
	}
	return res, err
}

// probe makes the first request to an anonymous source's registry, while
// the registry's answer to the ping is not known, the listing itself: its
// answer is also the ping's (200: no authentication; 401: the challenge),
// so that a registry that lets anyone list is listed in one round trip, not
// two. It returns the listing's answer for the lister to use as its first
// page (200), or nil when the handshake must go on (401) or the probe was
// not made or told nothing (any other answer or error: the ping follows as
// before and reports it). Schemes are tried as ggcr's ping tries them:
// https, then http for an insecure or local registry.
func (ix *Indexer) probe(ctx context.Context, src *source, base http.RoundTripper) *http.Response {
	host := src.repo.RegistryStr()
	schemes := []string{"https"}
	if src.repo.Scheme() == "http" {
		schemes = append(schemes, "http")
	}
	for _, scheme := range schemes {
		if _, known := ix.pings.get(scheme + "://" + host); known {
			return nil
		}
	}
	path := "/v2/" + src.repo.RepositoryStr() + "/tags/list"
	var failed []string // schemes that did not answer, remembered once another did
	for i, scheme := range schemes {
		key := scheme + "://" + host
		fallback := i < len(schemes)-1 // http follows: give https probeFallback, as ggcr's ping does
		res, err := probeOne(ctx, base, key+path, fallback)
		answered := func(a pingAnswer) {
			ix.pings.put(key, a)
			for _, f := range failed {
				ix.pings.put(f, pingAnswer{err: fmt.Errorf("%s did not answer within %s", f, probeFallback)})
			}
		}
		var rec tls.RecordHeaderError
		switch {
		case errors.As(err, &rec):
			ix.pings.put(key, pingAnswer{err: err})
			continue
		case err != nil && fallback:
			failed = append(failed, key)
			continue
		case err != nil:
			return nil
		case res.StatusCode == http.StatusOK:
			answered(pingAnswer{status: http.StatusOK, header: http.Header{}, anonymousOnly: true})
			return res
		case res.StatusCode == http.StatusUnauthorized && res.Header.Get("WWW-Authenticate") != "":
			answered(pingAnswer{status: res.StatusCode, header: http.Header{"Www-Authenticate": res.Header.Values("WWW-Authenticate")}})
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		res.Body.Close()
		return nil
	}
	return nil
}

// probeFallback is how long an https probe of a registry that may speak
// plain http gets before http is tried: ggcr's ping waits as long before
// it tries http beside https, so that a port that never answers https
// (filtered) does not hold the scan for the request timeout.
const probeFallback = 300 * time.Millisecond

// probeOne GETs url through base; with fallback, the request is abandoned
// if its answer has not begun within probeFallback. The answer's body
// stays readable until closed.
func probeOne(ctx context.Context, base http.RoundTripper, url string, fallback bool) (*http.Response, error) {
	pctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(pctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	var timer *time.Timer
	if fallback {
		timer = time.AfterFunc(probeFallback, cancel)
	}
	res, err := base.RoundTrip(req)
	if timer != nil && !timer.Stop() && err == nil {
		// The answer began just as the time ran out: its body is cut.
		res.Body.Close()
		err = context.DeadlineExceeded
	}
	if err != nil {
		cancel()
		return nil, err
	}
	res.Body = &cancelOnClose{ReadCloser: res.Body, cancel: cancel}
	return res, nil
}

// cancelOnClose ends a probe's context when its answer is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
