package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// GraphChannelsKey is the node metadata key naming the channel, as the
// OpenShift Update Service spells it.
const GraphChannelsKey = "io.openshift.upgrades.graph.release.channels"

// graph answers the update graph in the Cincinnati format (CONTRACT
// section 13) for the cluster-version-operator, oc adm upgrade and
// oc-mirror. version= and arch= are accepted and change nothing: the
// client finds its own node (one that is not a node is the client's to
// report). id= lets risks limited to some clusters cover edges.
func (s *Server) graph(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	q := c.QueryParams()
	channel := q.Get("channel")
	if channel == "" {
		return invalidParam("channel", "channel is required")
	}
	id := q.Get("id")
	if len(id) > 128 {
		return invalidParam("id", "%d bytes, at most 128", len(id))
	}
	if _, err := v.channel(channel); err != nil {
		return badParam("channel", err)
	}
	base := baseURL(s.opts.ExternalURL, c.Request())
	gz := acceptsGzip(c.Request())
	body, err := v.graphs.get(v.snap, channel, id, base, gz)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", channelCacheControl)
	h.Set("Vary", "Accept-Encoding")
	if gz {
		// A graph is megabytes of repetitive JSON; gzip makes it a tenth,
		// compressed once per snapshot. Go's HTTP client (the CVO's) asks
		// for gzip by itself.
		h.Set("Content-Encoding", "gzip")
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip (listed
// with no q, or a q above 0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(params), "=")
		if !ok || strings.TrimSpace(k) != "q" {
			return true
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q > 0
	}
	return false
}

// graphCache keeps a view's encoded graphs: every cluster asking a channel
// without cluster-limited risks gets the same bytes, built once per
// snapshot. Keys are channel, the risks that apply (as their names) and
// the base URL risk links use; at most maxCachedGraphs are kept.
type graphCache struct {
	mu sync.Mutex
	m  map[string]*cachedGraph
	// plain are the graphs every cluster sees (no cluster-limited risk),
	// by channel, for the console's drawing.
	plain map[string]*resolver.Graph
}

// graph is channel's graph as a cluster without an ID sees it, computed
// once per snapshot (a channel of 10,000 versions takes ~100 ms).
func (gc *graphCache) graph(snap *resolver.Snapshot, channel string) (*resolver.Graph, error) {
	gc.mu.Lock()
	g, ok := gc.plain[channel]
	gc.mu.Unlock()
	if ok {
		return g, nil
	}
	built, err := snap.Graph(channel, "")
	if err != nil {
		return nil, err
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.plain == nil || len(gc.plain) >= maxCachedGraphs {
		gc.plain = map[string]*resolver.Graph{}
	}
	gc.plain[channel] = &built
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

func (gc *graphCache) get(snap *resolver.Snapshot, channel, id, base string, gz bool) ([]byte, error) {
	key := channel + "\x00" + base + "\x00" + appliedRisks(snap, channel, id)
	gc.mu.Lock()
	cg, ok := gc.m[key]
	gc.mu.Unlock()
	if !ok {
		g, err := snap.Graph(channel, id)
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
func appliedRisks(snap *resolver.Snapshot, channel, id string) string {
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

func graphJSON(g *resolver.Graph, base string) openapi.CincinnatiGraph {
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
		if n.Digest != "" {
			payload = g.Image + "@" + n.Digest
		}
		out.Nodes[i] = openapi.CincinnatiNode{Version: resolver.SemverString(n.Version), Payload: payload, Metadata: meta}
	}
	for i, ce := range g.Conditional {
		j := openapi.CincinnatiConditionalEdges{Edges: make([]openapi.CincinnatiEdge, len(ce.Edges))}
		for k, e := range ce.Edges {
			j.Edges[k] = openapi.CincinnatiEdge{From: out.Nodes[e[0]].Version, To: out.Nodes[e[1]].Version}
		}
		for _, r := range ce.Risks {
			j.Risks = append(j.Risks, openapi.CincinnatiRisk{URL: riskURL(r, base), Name: r.Name, Message: r.Message,
				MatchingRules: []openapi.CincinnatiMatchingRule{{Type: "Always"}}})
		}
		out.ConditionalEdges[i] = j
	}
	return out
}
