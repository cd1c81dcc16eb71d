package indexer

import (
	"bytes"
	"crypto/tls"
	"errors"
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
	next  http.RoundTripper
	cache *pingCache
}

func (t *pingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || req.URL.Path != "/v2/" {
		return t.next.RoundTrip(req)
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	if a, ok := t.cache.get(key); ok {
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
