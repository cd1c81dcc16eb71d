package server

import (
	"encoding/json"
	"net/http"
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
	body, err := v.graphs.get(v.snap, channel, id, base)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", channelCacheControl)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// graphCache keeps a view's encoded graphs: every cluster asking a channel
// without cluster-limited risks gets the same bytes, built once per
// snapshot. Keys are channel, the risks that apply (as their names) and
// the base URL risk links use; at most maxCachedGraphs are kept.
type graphCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

const maxCachedGraphs = 64

func (gc *graphCache) get(snap *resolver.Snapshot, channel, id, base string) ([]byte, error) {
	key := channel + "\x00" + base + "\x00" + appliedRisks(snap, channel, id)
	gc.mu.Lock()
	b, ok := gc.m[key]
	gc.mu.Unlock()
	if ok {
		return b, nil
	}
	g, err := snap.Graph(channel, id)
	if err != nil {
		return nil, err
	}
	b, err = json.Marshal(graphJSON(&g, base))
	if err != nil {
		return nil, err
	}
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.m == nil || len(gc.m) >= maxCachedGraphs {
		gc.m = make(map[string][]byte)
	}
	gc.m[key] = b
	return b, nil
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
