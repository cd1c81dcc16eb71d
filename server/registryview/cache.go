package registryview

import (
	"container/list"
	"encoding/json"
	"sync"
)

// manifestCache keeps manifests by digest, least recently used first out,
// up to a byte budget: a thousand controllers listing and pulling a channel
// cost the upstream one request per manifest. A manifest is immutable under
// its digest, so an entry never goes stale. It also remembers each cached
// index's children, so a child asked for by digest is known to belong to a
// listed tag.
type manifestCache struct {
	mu     sync.Mutex
	budget int
	size   int
	ll     *list.List // of *cacheEntry, most recent first
	byKey  map[string]*list.Element
	// parents maps a child manifest's digest to the cached indexes that
	// list it (source-qualified keys).
	parents map[string]map[string]bool
}

type cacheEntry struct {
	key      string // source + "@" + digest
	m        *Manifest
	children []string
}

func newManifestCache(budget int) *manifestCache {
	return &manifestCache{budget: budget, ll: list.New(), byKey: map[string]*list.Element{}, parents: map[string]map[string]bool{}}
}

func (c *manifestCache) get(source, digest string) (*Manifest, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[source+"@"+digest]
	if !ok {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*cacheEntry).m, true
}

// put keeps m (a manifest of source), evicting the least recently used
// past the budget; one larger than the whole budget is not kept.
func (c *manifestCache) put(source string, m *Manifest) {
	if len(m.Body) > c.budget {
		return
	}
	key := source + "@" + m.Digest
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	e := &cacheEntry{key: key, m: m, children: childDigests(m)}
	c.byKey[key] = c.ll.PushFront(e)
	c.size += len(m.Body)
	for _, ch := range e.children {
		ck := source + "@" + ch
		if c.parents[ck] == nil {
			c.parents[ck] = map[string]bool{}
		}
		c.parents[ck][key] = true
	}
	for c.size > c.budget {
		c.evict(c.ll.Back())
	}
}

func (c *manifestCache) evict(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.ll.Remove(el)
	delete(c.byKey, e.key)
	c.size -= len(e.m.Body)
	src, _, _ := cutLast(e.key, "@")
	for _, ch := range e.children {
		ck := src + "@" + ch
		delete(c.parents[ck], e.key)
		if len(c.parents[ck]) == 0 {
			delete(c.parents, ck)
		}
	}
}

// parentsOf lists the cached indexes of source that name digest as a child.
func (c *manifestCache) parentsOf(source, digest string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.parents[source+"@"+digest] {
		_, d, _ := cutLast(k, "@")
		out = append(out, d)
	}
	return out
}

func cutLast(s, sep string) (before, after string, ok bool) {
	for i := len(s) - len(sep); i >= 0; i-- {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// childDigests are the manifests an image index lists; none for an image
// manifest (or anything that does not parse as an index).
func childDigests(m *Manifest) []string {
	var idx struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if json.Unmarshal(m.Body, &idx) != nil {
		return nil
	}
	out := make([]string, 0, len(idx.Manifests))
	for _, d := range idx.Manifests {
		if d.Digest != "" {
			out = append(out, d.Digest)
		}
	}
	return out
}
