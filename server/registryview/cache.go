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
	// owners maps a blob's digest (a config or a layer) to the cached
	// image manifests that name it (source-qualified keys).
	owners map[string]map[string]bool
}

type cacheEntry struct {
	key      string // source + "@" + digest
	m        *Manifest
	children []string
	blobs    []string
}

func newManifestCache(budget int) *manifestCache {
	return &manifestCache{budget: budget, ll: list.New(), byKey: map[string]*list.Element{},
		parents: map[string]map[string]bool{}, owners: map[string]map[string]bool{}}
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
	children, blobs := references(m)
	e := &cacheEntry{key: key, m: m, children: children, blobs: blobs}
	c.byKey[key] = c.ll.PushFront(e)
	c.size += len(m.Body)
	link(c.parents, source, key, e.children)
	link(c.owners, source, key, e.blobs)
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
	unlink(c.parents, src, e.key, e.children)
	unlink(c.owners, src, e.key, e.blobs)
}

// link records that the manifest key names each of digests (of source).
func link(m map[string]map[string]bool, source, key string, digests []string) {
	for _, d := range digests {
		dk := source + "@" + d
		if m[dk] == nil {
			m[dk] = map[string]bool{}
		}
		m[dk][key] = true
	}
}

func unlink(m map[string]map[string]bool, source, key string, digests []string) {
	for _, d := range digests {
		dk := source + "@" + d
		delete(m[dk], key)
		if len(m[dk]) == 0 {
			delete(m, dk)
		}
	}
}

// parentsOf lists the cached indexes of source that name digest as a child.
func (c *manifestCache) parentsOf(source, digest string) []string {
	return c.namers(c.parents, source, digest)
}

// ownersOf lists the cached image manifests of source that name blob
// digest as their config or a layer.
func (c *manifestCache) ownersOf(source, digest string) []string {
	return c.namers(c.owners, source, digest)
}

func (c *manifestCache) namers(m map[string]map[string]bool, source, digest string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range m[source+"@"+digest] {
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
	children, _ := references(m)
	return children
}

// references are what a manifest names: an index's child manifests, an
// image manifest's config and layers (blobs). Docker's schema 1 names its
// layers as fsLayers[].blobSum.
func references(m *Manifest) (children, blobs []string) {
	type desc struct {
		Digest string `json:"digest"`
	}
	var doc struct {
		Manifests []desc `json:"manifests"`
		Config    desc   `json:"config"`
		Layers    []desc `json:"layers"`
		FSLayers  []struct {
			BlobSum string `json:"blobSum"`
		} `json:"fsLayers"`
	}
	if json.Unmarshal(m.Body, &doc) != nil {
		return nil, nil
	}
	for _, d := range doc.Manifests {
		if d.Digest != "" {
			children = append(children, d.Digest)
		}
	}
	if doc.Config.Digest != "" {
		blobs = append(blobs, doc.Config.Digest)
	}
	for _, d := range doc.Layers {
		if d.Digest != "" {
			blobs = append(blobs, d.Digest)
		}
	}
	for _, l := range doc.FSLayers {
		if l.BlobSum != "" {
			blobs = append(blobs, l.BlobSum)
		}
	}
	return children, blobs
}
