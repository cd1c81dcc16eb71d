// Package graphcache keeps a view's encoded update graphs (the Cincinnati
// graph of each channel): built once per snapshot and served as bytes.
package graphcache

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/graph"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// GraphChannelsKey is the node metadata key naming the channel, as the
// OpenShift Update Service spells it.
const GraphChannelsKey = "io.openshift.upgrades.graph.release.channels"

// Cache keeps a view's encoded graphs: every cluster asking a channel
// without cluster-limited risks gets the same bytes, built once per
// snapshot. Keys are channel, the risks that apply (as their names) and
// the base URL risk links use; at most maxCachedGraphs are kept.
type Cache struct {
	mu sync.Mutex
	m  map[string]*cachedGraph
	// plain are the graphs every cluster sees (no cluster-limited risk),
	// by channel, for the console's drawing.
	plain map[string]*graph.Graph
	// Active is the fleet's versions per channel and their generation
	// (the served set keeps them); nil: none. Keys carry the generation.
	Active func(channel string) ([]string, uint64)
}

// activeOf is channel's fleet versions and a key part naming their
// generation.
func (gc *Cache) activeOf(channel string) ([]string, string) {
	if gc.Active == nil {
		return nil, "0"
	}
	vs, gen := gc.Active(channel)
	return vs, strconv.FormatUint(gen, 10)
}

// Graph is channel's graph as a cluster without an ID sees it, computed
// once per snapshot (a channel of 10,000 versions takes ~100 ms).
func (gc *Cache) Graph(snap *snapshot.Snapshot, channel string) (*graph.Graph, error) {
	active, gen := gc.activeOf(channel)
	key := channel + "\x00" + gen
	gc.mu.Lock()
	g, ok := gc.plain[key]
	gc.mu.Unlock()
	if ok {
		return g, nil
	}
	built, err := graph.Of(snap, channel, "", active, time.Now())
	if err != nil {
		return nil, err
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.plain == nil || len(gc.plain) >= maxCachedGraphs {
		gc.plain = map[string]*graph.Graph{}
	}
	gc.plain[key] = &built
	return &built, nil
}

// cachedGraph is one encoded graph, and its gzip form once asked for.
type cachedGraph struct {
	raw    []byte
	gzOnce sync.Once
	gz     []byte
}

func (g *cachedGraph) gzipped() []byte {
	g.gzOnce.Do(func() {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(g.raw) // a bytes.Buffer does not fail
		_ = zw.Close()
		g.gz = b.Bytes()
	})
	return g.gz
}

const maxCachedGraphs = 64

func (gc *Cache) Get(snap *snapshot.Snapshot, channel, id, base string, gz bool) ([]byte, error) {
	active, gen := gc.activeOf(channel)
	key := channel + "\x00" + base + "\x00" + gen + "\x00" + appliedRisks(snap, channel, id)
	gc.mu.Lock()
	cg, ok := gc.m[key]
	gc.mu.Unlock()
	if !ok {
		g, err := graph.Of(snap, channel, id, active, time.Now())
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(graphJSON(&g, base))
		if err != nil {
			return nil, err
		}
		cg = &cachedGraph{raw: b}
		gc.mu.Lock()
		if gc.m == nil || len(gc.m) >= maxCachedGraphs {
			gc.m = make(map[string]*cachedGraph)
		}
		gc.m[key] = cg
		gc.mu.Unlock()
	}
	if gz {
		return cg.gzipped(), nil
	}
	return cg.raw, nil
}

// appliedRisks names the risks of channel's source that apply to cluster
// id: the part of a graph that differs between clusters.
func appliedRisks(snap *snapshot.Snapshot, channel, id string) string {
	a, err := snap.Channel(channel)
	if err != nil {
		return ""
	}
	risks, _ := snap.Risks(a.Channel.Source)
	var key []byte
	for i := range risks {
		if risks[i].For(id) {
			key = append(append(key, risks[i].Name...), ',')
		}
	}
	return string(key)
}

func graphJSON(g *graph.Graph, base string) openapi.CincinnatiGraph {
	out := openapi.CincinnatiGraph{
		Version:          1,
		Nodes:            make([]openapi.CincinnatiNode, len(g.Nodes)),
		Edges:            g.Edges,
		ConditionalEdges: make([]openapi.CincinnatiConditionalEdges, len(g.Conditional)),
	}
	if out.Edges == nil {
		out.Edges = [][2]int{}
	}
	meta := map[string]string{GraphChannelsKey: g.Channel}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		payload := g.Image + ":" + n.Name
		if !n.Digest.IsZero() {
			payload = g.Image + "@" + n.Digest.String()
		}
		out.Nodes[i] = openapi.CincinnatiNode{Version: graph.SemverString(n.Version), Payload: payload, Metadata: meta}
	}
	for i, ce := range g.Conditional {
		j := openapi.CincinnatiConditionalEdges{Edges: make([]openapi.CincinnatiEdge, len(ce.Edges))}
		for k, e := range ce.Edges {
			j.Edges[k] = openapi.CincinnatiEdge{From: out.Nodes[e[0]].Version, To: out.Nodes[e[1]].Version}
		}
		for _, r := range ce.Risks {
			j.Risks = append(j.Risks, openapi.CincinnatiRisk{URL: RiskURL(r, base), Name: r.Name, Message: r.Message,
				MatchingRules: []openapi.CincinnatiMatchingRule{{Type: "Always"}}})
		}
		out.ConditionalEdges[i] = j
	}
	return out
}

// RiskURL is where a person reads about r: its own URL, else its API
// resource (Cincinnati clients require one).
func RiskURL(r *catalog.Risk, base string) string {
	if strings.HasPrefix(r.URL, "/") {
		return base + r.URL // a page of this service's (EndOfLife: the source's lifecycle)
	}
	if r.URL != "" {
		return r.URL
	}
	return base + "/api/v1/sources/" + url.PathEscape(r.Source) + "/risks/" + url.PathEscape(r.Name)
}
