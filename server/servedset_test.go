package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestAClusterThatSendsNoVersionIsNeverSentDown: a cluster that names
// itself but reports no version, answered v1.33.6+k3s2, is not answered
// v1.33.5+k3s1 after a pin to it made without rollback (it is treated as
// running what it was last answered); a request without an ID, and a
// cluster new to the channel, get the pin; a rollback pin sends it down.
func TestAClusterThatSendsNoVersionIsNeverSentDown(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: k3sChannels(),
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond}, WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	ask := func(id string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/v1.33", nil)
		if id != "" {
			req.Header.Set("X-SUC-Cluster-ID", id)
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		loc := res.Header.Get("Location")
		return loc[strings.LastIndex(loc, "/")+1:]
	}
	if got := ask("c-1"); got != "v1.33.6+k3s2" {
		t.Fatalf("first answer %s, want v1.33.6+k3s2", got)
	}
	time.Sleep(150 * time.Millisecond) // the recorder takes the queue every 50 ms
	pin := func(body string) {
		t.Helper()
		res, b := send(t, http.MethodPut, base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], body)
		if res.StatusCode != 200 {
			t.Fatalf("pin: %d %s", res.StatusCode, b)
		}
	}
	pin(`{"version":"v1.33.5+k3s1","reason":"older"}`)
	if got := ask("c-1"); got != "v1.33.6+k3s2" {
		t.Errorf("a cluster last answered v1.33.6+k3s2, reporting nothing, after a pin to an older version: %s, want v1.33.6+k3s2 (no downgrade)", got)
	}
	if got := ask(""); got != "v1.33.5+k3s1" {
		t.Errorf("a request without a cluster ID: %s, want the pin", got)
	}
	if got := ask("c-new"); got != "v1.33.5+k3s1" {
		t.Errorf("a cluster new to the channel: %s, want the pin", got)
	}
	pin(`{"version":"v1.33.5+k3s1","reason":"bad release","rollback":true}`)
	if got := ask("c-1"); got != "v1.33.5+k3s1" {
		t.Errorf("after a rollback pin: %s, want v1.33.5+k3s1", got)
	}
}

// TestEveryDoorReadsTheServedSet: after a pin to an older version without
// rollback, the version active clusters were last answered stays in the
// Renovate feed and the update graph (a client taking the newest listed
// version is not moved down), while no cluster has it the feed ends at
// the pin.
func TestEveryDoorReadsTheServedSet(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: k3sChannels(),
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond, ActiveWindow: 2 * time.Second}, WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/v1.33", nil)
	req.Header.Set("X-SUC-Cluster-ID", "c-1")
	req.Header.Set("X-SUC-Latest-Version", "v1.33.6-k3s2")
	if res, err := noRedirects.Do(req); err != nil || res.StatusCode != http.StatusFound {
		t.Fatalf("ask: %v %v", res, err)
	}
	if res, b := send(t, http.MethodPut, base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], `{"version":"v1.33.5+k3s1","reason":"older"}`); res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, b)
	}
	feed := func() string {
		_, b := get(t, &httptest.Server{URL: base}, "/api/v1/channels/v1.33/releases")
		return string(b)
	}
	graph := func() string {
		_, b := get(t, &httptest.Server{URL: base}, "/api/upgrades_info/v1/graph?channel=v1.33")
		return string(b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(feed(), `"version":"v1.33.6-k3s2"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the Renovate feed dropped v1.33.6-k3s2, which an active cluster was last answered:\n%s", feed())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if g := graph(); !strings.Contains(g, `"version":"1.33.6+k3s2"`) {
		t.Errorf("the update graph dropped 1.33.6+k3s2:\n%.600s", g)
	}
	// The cluster goes quiet past the active window: the feed ends at the pin.
	deadline = time.Now().Add(15 * time.Second)
	for strings.Contains(feed(), `"version":"v1.33.6-k3s2"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed kept v1.33.6-k3s2 with no active cluster on it")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
