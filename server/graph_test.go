package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/graphcache"
)

// cvoGraph is the graph as the cluster-version-operator decodes it
// (github.com/openshift/cluster-version-operator pkg/cincinnati): node
// versions parsed strictly as semver, edges as [from, to] pairs of exactly
// two indexes, conditional edges by version strings.
type cvoGraph struct {
	Nodes []struct {
		Version  string         `json:"version"`
		Image    string         `json:"payload"`
		Metadata map[string]any `json:"metadata"`
	} `json:"nodes"`
	Edges            [][]int `json:"edges"`
	ConditionalEdges []struct {
		Edges []struct{ From, To string } `json:"edges"`
		Risks []struct {
			URL, Name, Message string
			MatchingRules      []struct{ Type string } `json:"matchingRules"`
		} `json:"risks"`
	} `json:"conditionalEdges"`
}

// cvoUpdates is GetUpdates' reading of g for a cluster at version: its
// current node, its updates and its conditional updates, with the errors
// it would report. The rules are the CVO's: the current version must be
// a node (VersionNotFound), every conditional target must be a node, a
// target both plain and conditional is kept conditional only, a risk
// with no known matching rule is dropped, and a target named by two
// conditional entries is dropped altogether.
func cvoUpdates(g *cvoGraph, version string) (updates []string, conditional map[string][]string, err error) {
	cur, err := semver.StrictNewVersion(version)
	if err != nil {
		return nil, nil, err
	}
	idx := -1
	for i, n := range g.Nodes {
		v, err := semver.StrictNewVersion(n.Version)
		if err != nil {
			return nil, nil, fmt.Errorf("ResponseInvalid: node %q: %w", n.Version, err)
		}
		if v.Equal(cur) && idx < 0 {
			idx = i
		}
	}
	if idx < 0 {
		return nil, nil, fmt.Errorf("VersionNotFound: %s", version)
	}
	for _, e := range g.Edges {
		if len(e) != 2 || e[0] < 0 || e[1] < 0 || e[0] >= len(g.Nodes) || e[1] >= len(g.Nodes) {
			return nil, nil, fmt.Errorf("ResponseInvalid: edge %v", e)
		}
		if e[0] == idx {
			updates = append(updates, g.Nodes[e[1]].Version)
		}
	}
	conditional = map[string][]string{}
	targets := map[string]int{}
	for _, ce := range g.ConditionalEdges {
		for _, e := range ce.Edges {
			if e.From != version {
				continue
			}
			found := false
			for _, n := range g.Nodes {
				found = found || n.Version == e.To
			}
			if !found {
				return nil, nil, fmt.Errorf("ResponseInvalid: no node for conditional update %s", e.To)
			}
			for _, r := range ce.Risks {
				if r.URL == "" || r.Name == "" || r.Message == "" {
					return nil, nil, fmt.Errorf("risk %+v lacks url, name or message (required by ClusterVersion's schema)", r)
				}
				known := false
				for _, m := range r.MatchingRules {
					known = known || m.Type == "Always" || m.Type == "PromQL"
				}
				if !known {
					return nil, nil, fmt.Errorf("risk %s: no matching rule the CVO knows: the update would be dropped", r.Name)
				}
				conditional[e.To] = append(conditional[e.To], r.Name)
			}
			targets[e.To]++
		}
	}
	for to, n := range targets {
		if n > 1 {
			return nil, nil, fmt.Errorf("conditional update to %s declared %d times: the CVO drops it", to, n)
		}
	}
	var plain []string
	for _, u := range updates {
		if _, ok := conditional[u]; !ok {
			plain = append(plain, u)
		}
	}
	return plain, conditional, nil
}

// graphSnapshot is the k3s fixture with a risk for every cluster and one
// for prod clusters only, served by the k3s-released channel.
func graphSnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	sd := sourceData(src, k3sTags(), nil)
	sd.Blocks = []catalog.Block{{Source: "k3s", Version: "v1.32.10+k3s1", Reason: "CVE", BlockedBy: "ops", BlockedAt: scanned}}
	sd.Risks = []catalog.Risk{
		{Source: "k3s", Name: "EtcdMigration", Message: "etcd migration loses leases", From: "<1.33.5", To: ">=1.34.0", CreatedBy: "release-bot", CreatedAt: scanned},
		{Source: "k3s", Name: "ProdIngress", Message: "ingress class changes", URL: "https://example.com/ingress", From: "~1.33", To: "1.34.2", Clusters: []string{"^prod-"}, CreatedBy: "sre", CreatedAt: scanned},
	}
	return snapshot.New(k3sChannels(), []catalog.SourceData{sd}, nil, loadedAt)
}

// TestGraphConformsToTheCVOClient: every node of the graph, as the
// current version of a cluster, is read without error by the CVO's rules;
// edges never go down, cross a major or skip a minor; blocked versions
// are not nodes; the risky edges are conditional (for prod-1 also the
// prod-only risk) and not plain; nodes carry the channel and a digest
// payload.
func TestGraphConformsToTheCVOClient(t *testing.T) {
	_, ts, _ := newTestServer(t, graphSnapshot(t), "https://tidemark.example.com")
	read := func(query string) (*cvoGraph, openapi.CincinnatiGraph) {
		t.Helper()
		res, body := get(t, ts, "/api/upgrades_info/v1/graph?"+query, "Accept", "application/json")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("graph %s: %d %s", query, res.StatusCode, body)
		}
		var g cvoGraph
		var typed openapi.CincinnatiGraph
		if err := json.Unmarshal(body, &g); err != nil {
			t.Fatalf("CVO decode: %v", err)
		}
		if err := json.Unmarshal(body, &typed); err != nil {
			t.Fatal(err)
		}
		return &g, typed
	}
	g, typed := read("channel=k3s-released&arch=amd64&version=1.33.0%2Bk3s1")
	if typed.Version != 1 || len(g.Nodes) < 20 {
		t.Fatalf("graph version %d with %d nodes", typed.Version, len(g.Nodes))
	}
	idx := map[string]int{}
	for i, n := range g.Nodes {
		idx[n.Version] = i
		if strings.HasPrefix(n.Version, "v") || !strings.Contains(n.Image, "@sha256:") || !strings.HasPrefix(n.Image, "docker.io/rancher/k3s-upgrade@") {
			t.Errorf("node %+v: want a version without v and a digest payload", n)
		}
		if n.Metadata[graphcache.GraphChannelsKey] != "k3s-released" {
			t.Errorf("node %s metadata %v", n.Version, n.Metadata)
		}
		if n.Version == "1.32.10+k3s1" {
			t.Errorf("the blocked 1.32.10+k3s1 is a node")
		}
		if i > 0 {
			// Ascending in Tidemark's order: semver's, then the build
			// number (v1.33.6+k3s1 before +k3s2, which semver calls equal).
			prev, _ := semver.StrictNewVersion(g.Nodes[i-1].Version)
			cur, _ := semver.StrictNewVersion(n.Version)
			if !prev.LessThan(cur) && !(prev.Equal(cur) && g.Nodes[i-1].Version < n.Version) {
				t.Errorf("nodes not ascending at %s", n.Version)
			}
		}
	}
	minorsWithNodes := map[[2]uint64]bool{}
	for _, n := range g.Nodes {
		v, _ := semver.StrictNewVersion(n.Version)
		minorsWithNodes[[2]uint64{v.Major(), v.Minor()}] = true
	}
	check := func(from, to string) {
		a, _ := semver.StrictNewVersion(from)
		b, _ := semver.StrictNewVersion(to)
		switch {
		case a.Equal(b):
			// Another build of the same release (k3s1 -> k3s2): up in
			// Tidemark's order. The CVO matches its node by semver
			// equality, so a cluster on k3s2 reads the k3s1 node's edges
			// and sees k3s2 offered: harmless, and what the contract's
			// one node per servable version gives it.
		case !a.LessThan(b):
			t.Errorf("edge %s -> %s goes down", from, to)
		case a.Major() != b.Major():
			t.Errorf("edge %s -> %s crosses a major", from, to)
		}
		for m := a.Minor() + 1; m < b.Minor(); m++ {
			if minorsWithNodes[[2]uint64{a.Major(), m}] {
				t.Errorf("edge %s -> %s skips minor %d.%d", from, to, a.Major(), m)
			}
		}
	}
	for _, n := range g.Nodes {
		updates, conditional, err := cvoUpdates(g, n.Version)
		if err != nil {
			t.Fatalf("the CVO at %s: %v", n.Version, err)
		}
		for _, u := range updates {
			check(n.Version, u)
		}
		for u := range conditional {
			check(n.Version, u)
		}
	}
	updates, conditional, _ := cvoUpdates(g, "1.33.0+k3s1")
	if len(conditional["1.34.2+k3s2"]) != 1 || conditional["1.34.2+k3s2"][0] != "EtcdMigration" {
		t.Errorf("from 1.33.0: conditional %v, want 1.34.2+k3s2 behind EtcdMigration", conditional)
	}
	for _, u := range updates {
		if strings.HasPrefix(u, "1.34.") {
			t.Errorf("from 1.33.0: %s offered unconditionally", u)
		}
	}
	if !containsStr(updates, "1.33.6+k3s2") {
		t.Errorf("from 1.33.0: updates %v, want 1.33.6+k3s2", updates)
	}
	updates, _, _ = cvoUpdates(g, "1.33.6+k3s2")
	if !containsStr(updates, "1.34.2+k3s2") {
		t.Errorf("from 1.33.6 without an id: updates %v, want 1.34.2+k3s2 (the prod risk is not for everyone)", updates)
	}
	g, typed = read("channel=k3s-released&id=prod-1")
	_, conditional, _ = cvoUpdates(g, "1.33.6+k3s2")
	if len(conditional["1.34.2+k3s2"]) != 1 || conditional["1.34.2+k3s2"][0] != "ProdIngress" {
		t.Errorf("from 1.33.6 as prod-1: conditional %v, want 1.34.2+k3s2 behind ProdIngress", conditional)
	}
	_, conditional, _ = cvoUpdates(g, "1.33.0+k3s1")
	if got := conditional["1.34.2+k3s2"]; len(got) != 2 {
		t.Errorf("from 1.33.0 as prod-1: risks %v on 1.34.2+k3s2, want both in one entry", got)
	}
	for _, ce := range typed.ConditionalEdges {
		for _, r := range ce.Risks {
			if _, err := url.ParseRequestURI(r.URL); err != nil {
				t.Errorf("risk %s url %q: %v", r.Name, r.URL, err)
			}
		}
	}

	// Bad input: no channel is 400 naming it, an unknown one 404, a
	// version that is not a node is still answered.
	for _, tc := range []struct {
		query string
		code  int
	}{{"", 400}, {"channel=nope", 404}, {"channel=k3s-released&version=9.9.9", 200}, {"channel=k3s-released&id=" + strings.Repeat("x", 129), 400}} {
		res, body := get(t, ts, "/api/upgrades_info/v1/graph?"+tc.query)
		if res.StatusCode != tc.code {
			t.Errorf("graph?%s: %d %s, want %d", tc.query, res.StatusCode, body, tc.code)
		}
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestGraphGzip: a client asking for gzip gets the same graph compressed
// (Content-Encoding, Vary), and one refusing it (q=0) gets it plain.
func TestGraphGzip(t *testing.T) {
	_, ts, _ := newTestServer(t, graphSnapshot(t), "")
	_, plain := get(t, ts, "/api/upgrades_info/v1/graph?channel=k3s-released", "Accept-Encoding", "identity")
	res, body := get(t, ts, "/api/upgrades_info/v1/graph?channel=k3s-released", "Accept-Encoding", "br, gzip")
	if res.Header.Get("Content-Encoding") != "gzip" || !strings.Contains(res.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip asked: Content-Encoding %q Vary %q", res.Header.Get("Content-Encoding"), res.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(unzipped, plain) || len(body) >= len(plain) {
		t.Errorf("gzip body: %d bytes, inflated %d (%v); plain %d", len(body), len(unzipped), err, len(plain))
	}
	if res, _ := get(t, ts, "/api/upgrades_info/v1/graph?channel=k3s-released", "Accept-Encoding", "gzip;q=0"); res.Header.Get("Content-Encoding") != "" {
		t.Errorf("gzip;q=0: Content-Encoding %q", res.Header.Get("Content-Encoding"))
	}
}
