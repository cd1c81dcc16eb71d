package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestAnEdgeNodeBackFromALongAbsenceIsSteppedAtOnce: an edge node (its
// node ID as the cluster ID) reports its version on replica A, goes silent
// for longer than the fleet's active window (A's sweep forgets its settle
// clock) and comes back. It has run its version far longer than settle, so
// its first request is stepped, on the replica that knew it and on one that
// never saw it.
func TestAnEdgeNodeBackFromALongAbsenceIsSteppedAtOnce(t *testing.T) {
	st, src := fleetStore(t)
	const (
		window = 400 * time.Millisecond
		settle = 600 * time.Millisecond
	)
	ch := catalog.Channel{Name: "edge", Source: "k3s", Stream: resolver.Released, Stepwise: true, Settle: settle,
		Redirect: "https://github.com/k3s-io/k3s/releases/tag/"}
	replica := func() string {
		srv, err := New(Options{Data: st, Sources: []catalog.Source{src}, Channels: []catalog.Channel{ch}, Store: st,
			Fleet: fleet.Options{Store: st, FlushEvery: 50 * time.Millisecond, ActiveWindow: window}})
		if err != nil {
			t.Fatal(err)
		}
		return runOnLoopback(t, srv, runOpts{})
	}
	a, b := replica(), replica()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	poll := func(base, node string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/edge", nil)
		req.Header.Set("X-SUC-Cluster-ID", node)
		req.Header.Set("X-SUC-Latest-Version", fleetClimb[0])
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusFound {
			t.Fatalf("%s: %d, want 302", node, res.StatusCode)
		}
		return strings.ReplaceAll(filepath.Base(res.Header.Get("Location")), "+", "-")
	}

	for _, node := range []string{"node-a", "node-b"} {
		if got := poll(a, node); got != fleetClimb[0] {
			t.Fatalf("%s's first request on A was sent %s, want its own %s (settle)", node, got, fleetClimb[0])
		}
	}
	// The nodes' records reach the database, then they stay silent past
	// the active window (A's sweep runs every window/2) and past settle.
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, err := st.FleetCluster(t.Context(), "node-b")
		if err != nil && !errors.Is(err, resolver.ErrNotFound) {
			t.Fatal(err)
		}
		if len(recs) == 1 && !recs[0].ReportedSince.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node-b's record never reached the database: %+v", recs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(2*window + settle)

	if got := poll(a, "node-a"); got != fleetClimb[1] {
		t.Errorf("node-a back on A (which had swept its clock) was sent %s, want its next step %s at once", got, fleetClimb[1])
	}
	if got := poll(b, "node-b"); got != fleetClimb[1] {
		t.Errorf("node-b back on B (which never saw it) was sent %s, want its next step %s at once", got, fleetClimb[1])
	}
	// OTA: a node asks "is an upgrade available for me?" with the JSON
	// answer and decides itself; the answer is the same per-node step.
	req, _ := http.NewRequest(http.MethodGet, b+"/v1-release/channels/edge", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-SUC-Cluster-ID", "node-b")
	req.Header.Set("X-SUC-Latest-Version", fleetClimb[0])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	t.Logf("node-b's JSON answer: %s", body)
	var ans struct {
		Version string `json:"version"`
		Tag     string `json:"tag"`
	}
	if err := json.Unmarshal(body, &ans); err != nil || res.StatusCode != http.StatusOK || ans.Tag != fleetClimb[1] {
		t.Errorf("node-b's JSON answer: %d %s, want 200 naming tag %s", res.StatusCode, body, fleetClimb[1])
	}
	// docs/edge.md shows this very answer.
	doc, err := os.ReadFile("../docs/edge.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), string(bytes.TrimSpace(body))) {
		t.Errorf("docs/edge.md does not show the JSON answer the server gives:\n%s", body)
	}
	// A node new to the fleet still settles first.
	if got := poll(b, "node-new"); got != fleetClimb[0] {
		t.Errorf("a new node was sent %s, want its own %s until settle has passed", got, fleetClimb[0])
	}
}
