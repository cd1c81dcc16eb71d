package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// claimsServer serves the k3s channels with a fleet recorder that flushes
// every 50 ms and an active window of a minute.
func claimsServer(t *testing.T) (*pgEnv, *Server, string) {
	t.Helper()
	env := newPGEnv(t, Options{})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: k3sChannels(),
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond, ActiveWindow: time.Minute}, WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return env, srv, runOnLoopback(t, srv, runOpts{})
}

// askAs is one SUC-style request to channel from cluster id reporting
// reported ("" for none), asked for JSON: the answer's version and held.
func askAs(t *testing.T, base, channel, id, reported string) (string, *openapi.Held) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/"+channel, nil)
	req.Header.Set("Accept", "application/json")
	if id != "" {
		req.Header.Set("X-SUC-Cluster-ID", id)
	}
	if reported != "" {
		req.Header.Set("X-SUC-Latest-Version", reported)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ch openapi.Channel
	if err := json.NewDecoder(res.Body).Decode(&ch); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("%s asking %s: %d %v", id, channel, res.StatusCode, err)
	}
	return str(ch.Version), ch.Held
}

// TestAReportNeverWidensAChannel: a cluster reporting a version newer than
// its channel's pin is answered a stay, and that stay lists nothing new
// in the Renovate feed or the update graph; a version the channel directed
// an active cluster to before a pin to an older one stays listed.
func TestAReportNeverWidensAChannel(t *testing.T) {
	env, _, base := claimsServer(t)
	polled := map[string]time.Time{}
	pin := func(version string) {
		t.Helper()
		if res, b := send(t, http.MethodPut, base+"/api/v1/channels/k3s-released/pin", env.tokens["ci-promote"],
			`{"version":"`+version+`","reason":"test"}`); res.StatusCode != 200 {
			t.Fatalf("pin: %d %s", res.StatusCode, b)
		}
	}
	pin("v1.33.6+k3s2")
	polled["good"] = time.Now()
	if got, _ := askAs(t, base, "k3s-released", "good", "v1.33.5-k3s1"); got != "v1.33.6+k3s2" {
		t.Fatalf("good is answered %s, want v1.33.6+k3s2", got)
	}
	awaitRecorded(t, env.st, polled)
	pin("v1.33.5+k3s1")
	// A made-up cluster reports the newest version: it is held there.
	polled["made-up"] = time.Now()
	if got, held := askAs(t, base, "k3s-released", "made-up", "v1.34.2-k3s2"); got != "v1.34.2+k3s2" || held == nil || held.Reason != "downgrade" {
		t.Fatalf("made-up is answered %s held %+v, want a stay at v1.34.2+k3s2", got, held)
	}
	awaitRecorded(t, env.st, polled)
	feed := func() string {
		_, b := get(t, &httptest.Server{URL: base}, "/api/v1/channels/k3s-released/releases")
		return string(b)
	}
	// good's v1.33.6+k3s2 is listed once the served set read both records.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(feed(), `"version":"v1.33.6-k3s2"`) {
		if time.Now().After(deadline) {
			t.Fatalf("the feed never listed v1.33.6-k3s2, which good was directed to:\n%s", feed())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f := feed(); strings.Contains(f, `"version":"v1.34.`) {
		t.Errorf("a report widened the Renovate feed to v1.34:\n%.800s", f)
	}
	if _, g := get(t, &httptest.Server{URL: base}, "/api/upgrades_info/v1/graph?channel=k3s-released"); strings.Contains(string(g), `"version":"1.34.`) {
		t.Errorf("a report widened the update graph to 1.34:\n%.800s", g)
	}
	var page openapi.FleetClusterPage
	getJSON(t, base+"/api/v1/fleet/clusters?channel=k3s-released", env.tokens["root"], &page)
	for _, c := range page.Clusters {
		switch {
		case c.ID == "good" && (c.Directed == nil || *c.Directed != "v1.33.6+k3s2"):
			t.Errorf("good's record says directed %v, want v1.33.6+k3s2", c.Directed)
		case c.ID == "made-up" && c.Directed != nil:
			t.Errorf("made-up's record says directed %q, want null (only stays)", *c.Directed)
		}
	}
}

// TestABlockedVersionNeverSendsAClusterAboveItsChannel: on a channel
// pinned at v1.33.5, a cluster on blocked v1.33.6+k3s2 stays there, held
// as blocked, instead of being sent to v1.34.2 (a version the channel
// never offered); on a stepwise channel too.
func TestABlockedVersionNeverSendsAClusterAboveItsChannel(t *testing.T) {
	env, _, base := claimsServer(t)
	if res, b := send(t, http.MethodPut, base+"/api/v1/channels/k3s-released/pin", env.tokens["ci-promote"],
		`{"version":"v1.33.5+k3s1","reason":"test"}`); res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, b)
	}
	if res, b := send(t, http.MethodPut, base+"/api/v1/sources/k3s/versions/v1.33.6-k3s2/block", env.tokens["ci-promote"],
		`{"reason":"broken"}`); res.StatusCode != 200 {
		t.Fatalf("block: %d %s", res.StatusCode, b)
	}
	got, held := askAs(t, base, "k3s-released", "c-1", "v1.33.6-k3s2")
	if got != "v1.33.6+k3s2" || held == nil || held.Reason != "downgrade" || !held.Blocked {
		t.Errorf("a cluster on blocked v1.33.6+k3s2 is answered %s held %+v, want to stay, held as blocked", got, held)
	}
}

// TestPromotionOnlyGoesUp: once stable-33 was promoted to v1.33.6+k3s2, a
// rollback of v1.33 to v1.33.5 does not take it down: it waits, and its
// status and channel object say why, naming the older version.
func TestPromotionOnlyGoesUp(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	pf.adopted(5)
	if st := pf.round(); st.Why != "" {
		t.Fatalf("promotion: %+v, want promoted", st)
	}
	pf.pin(http.MethodPut, "v1.33", `{"version":"v1.33.5+k3s1","reason":"bad release","rollback":true}`)
	st := pf.round()
	want := "v1.33 answers an older version (v1.33.5+k3s1)"
	if st.Why != want {
		t.Errorf("after v1.33 rolled back: %+v, want %q", st, want)
	}
	ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33")
	if str(ch.Version) != "v1.33.6+k3s2" {
		t.Errorf("stable-33 followed its from down to %s", str(ch.Version))
	}
	if ch.Promotion == nil || str(ch.Promotion.Waiting) != want {
		t.Errorf("stable-33's promotion %+v, want waiting %q", ch.Promotion, want)
	}
	events, _ := pf.env.st.History(context.Background(), "stable-33")
	for _, e := range events {
		if e.Action == "pin" && e.To == "v1.33.5+k3s1" {
			t.Errorf("a promotion down was recorded: %+v", e)
		}
	}
}

// TestAReportStartsNoSoak: a cluster reporting the candidate before the
// channel ever answers it starts no soak: the version's first told is
// when the channel first answered it (the unpin), and the promotion waits
// out the whole soak from there.
func TestAReportStartsNoSoak(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: promotedChannels(0),
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond}, Governance: env.st, WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	loop, err := promotion.New(promotion.Options{Store: env.st, Snapshot: func() *snapshot.Snapshot { return srv.Cur.Load().Snap }})
	if err != nil {
		t.Fatal(err)
	}
	pin := func(method, body string) {
		t.Helper()
		if res, b := send(t, method, base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], body); res.StatusCode != 200 {
			t.Fatalf("%s v1.33: %d %s", method, res.StatusCode, b)
		}
	}
	polled := map[string]time.Time{}
	pin(http.MethodPut, `{"version":"v1.33.5+k3s1","reason":"before the release"}`)
	for _, id := range []string{"c-0", "c-1", "c-2"} {
		polled[id] = time.Now()
		askAs(t, base, "v1.33", id, "v1.33.5-k3s1")
	}
	// An early cluster reports the release and is held there (a stay).
	polled["early"] = time.Now()
	if got, held := askAs(t, base, "v1.33", "early", "v1.33.6-k3s2"); got != "v1.33.6+k3s2" || held == nil {
		t.Fatalf("early is answered %s held %+v, want a stay", got, held)
	}
	awaitRecorded(t, env.st, polled)
	loop.Round(context.Background())
	time.Sleep(1100 * time.Millisecond)
	unpinned := time.Now().Truncate(time.Second)
	pin(http.MethodDelete, "")
	loop.Round(context.Background())
	var ev openapi.Evidence
	getJSON(t, base+"/api/v1/channels/v1.33/evidence?version=v1.33.6-k3s2", env.tokens["root"], &ev)
	if ev.FirstTold == nil || ev.FirstTold.Before(unpinned) {
		t.Errorf("first told %v, want the unpin (%v) or later: a report started the soak", ev.FirstTold, unpinned)
	}
	if ev.Told != 0 || ev.Adopted != 0 {
		t.Errorf("evidence %+v: a stay counted as told or adopted", ev)
	}
	if st, _ := loop.StatusOf("stable-33"); !strings.HasPrefix(st.Why, "v1.33.6+k3s2 has not been told") {
		t.Errorf("stable-33 right after the unpin: %+v, want to wait for a cluster to be told", st)
	}
}

// TestAConfigurationChangeStartsTheSoakWhenItLands: a channel whose
// configured latest: moves (a SIGHUP, no pin) is told the new version
// from the first round that sees it, not from when that version was
// indexed long before, so a promotion from it waits out its soak.
func TestAConfigurationChangeStartsTheSoakWhenItLands(t *testing.T) {
	env := newPGEnv(t, Options{})
	serving := func(latest string) *Server {
		t.Helper()
		chs := append(k3sChannels(), catalog.Channel{Name: "cfg", Source: "k3s", Stream: resolver.Released, Latest: latest})
		srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		return srv
	}
	before, after := serving("v1.33.5+k3s1"), serving("v1.33.6+k3s2")
	cur := before
	loop, err := promotion.New(promotion.Options{Store: env.st, Snapshot: func() *snapshot.Snapshot { return cur.Cur.Load().Snap }})
	if err != nil {
		t.Fatal(err)
	}
	loop.Round(context.Background())
	time.Sleep(1100 * time.Millisecond)
	cur = after // the configuration was reloaded
	reloaded := time.Now().Truncate(time.Second)
	loop.Round(context.Background())
	_, told, err := env.st.EvidenceCounts(context.Background(), time.Now().Add(-time.Hour), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	got := told[resolver.ChannelVersion{Channel: "cfg", Version: "v1.33.6+k3s2"}]
	if got.First.Before(reloaded) {
		t.Errorf("cfg first told v1.33.6+k3s2 at %v, before its configuration named it (%v)", got.First, reloaded)
	}
	if first := told[resolver.ChannelVersion{Channel: "cfg", Version: "v1.33.5+k3s1"}].First; first.IsZero() || !first.Before(reloaded) {
		t.Errorf("cfg first told v1.33.5+k3s1 at %v, want before the reload", first)
	}
}
