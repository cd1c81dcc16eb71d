package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// lifecycleEnv is a service indexing a real in-process registry into
// Postgres, whose snapshots are built at a clock the test moves.
type lifecycleEnv struct {
	t      *testing.T
	ctx    context.Context
	host   string // the registry
	ix     *indexer.Indexer
	srv    *Server
	url    string // validating front of srv
	offset atomic.Int64
	tokens map[string]string // "promote", "admin"
}

// now is the wall clock moved on by the test's offset.
func (e *lifecycleEnv) now() time.Time { return time.Now().Add(time.Duration(e.offset.Load())) }

// push pushes tags and indexes them (a scan, as the indexer's schedule would).
func (e *lifecycleEnv) push(tags ...string) {
	e.t.Helper()
	if _, err := distreg.Push(e.ctx, e.host, "rancher/k3s-upgrade", tags, 1); err != nil {
		e.t.Fatal(err)
	}
	if err := e.ix.ScanNow(e.ctx, "k3s"); err != nil {
		e.t.Fatal(err)
	}
}

// until polls cond (the snapshot is rebuilt off the request path).
func (e *lifecycleEnv) until(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *lifecycleEnv) do(method, path, body string, hdr ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func (e *lifecycleEnv) lines() map[string]openapi.LifecycleLine {
	e.t.Helper()
	_, b := e.do(http.MethodGet, "/api/v1/sources/k3s/lifecycle", "")
	var lc openapi.SourceLifecycle
	if err := json.Unmarshal(b, &lc); err != nil {
		e.t.Fatalf("lifecycle %s: %v", b, err)
	}
	out := map[string]openapi.LifecycleLine{}
	for _, l := range lc.Lines {
		out[l.Line] = l
	}
	return out
}

// startLifecycle runs a replica on a registry holding tags, with
// lifecycle: {support: {minors: 1, grace}} on its source.
func startLifecycle(t *testing.T, grace time.Duration, channels []catalog.Channel, tags ...string) *lifecycleEnv {
	t.Helper()
	return startWithPolicy(t, lifecycle.Policy{Minors: 1, Grace: grace}, channels, tags...)
}

// startWithPolicy is startLifecycle with any lifecycle policy.
func startWithPolicy(t *testing.T, policy lifecycle.Policy, channels []catalog.Channel, tags ...string) *lifecycleEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	e := &lifecycleEnv{t: t, ctx: ctx, host: strings.TrimPrefix(reg.URL, "http://")}
	st := openStore(t, storetest.URL(t))
	src := semverSource(t, "k3s", e.host+"/rancher/k3s-upgrade")
	src.Lifecycle = policy
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		t.Fatal(err)
	}
	snaps, err := live.New(live.Options{Data: st, Sources: []catalog.Source{src}, Channels: channels, Now: e.now})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := indexer.New(indexer.Options{Store: st, Sources: []indexer.Source{{Source: src, Insecure: true}},
		OnChange: func(source string) { snaps.Notify(snapshot.Change{Source: source}) }})
	if err != nil {
		t.Fatal(err)
	}
	e.ix = ix
	e.tokens = map[string]string{}
	for _, scope := range []string{ScopePromote, ScopeAdmin} {
		if e.tokens[scope], err = st.CreateToken(ctx, scope+"-bot", []string{scope}); err != nil {
			t.Fatal(err)
		}
	}
	if e.srv, err = New(Options{Snapshots: snaps, Store: st, Governance: st, ClusterAPI: []string{"k3s"}, WriteRate: 100, WriteBurst: 100,
		Rollouts: RolloutOptions{Store: st}, Fleet: fleet.Options{Store: st, FlushEvery: 50 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	e.push(tags...)
	runOnLoopback(t, e.srv, runOpts{})
	ts := httptest.NewServer(validating(t, e.srv.Handler()))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// TestALineExpiresWithoutARestart: with a grace of 20 s after the next
// line's release, a line's classification, the warning a cluster on it
// gets, the Renovate feed, the update graph and the Cluster API hook all
// change when the (moved) clock passes its end: no restart, no rescan.
func TestALineExpiresWithoutARestart(t *testing.T) {
	grace := 20 * time.Second
	channels := []catalog.Channel{
		{Name: "stable", Source: "k3s", Stream: resolver.Released},
		{Name: "old", Source: "k3s", Stream: resolver.Released, Latest: "v1.31.1+k3s1"},
	}
	e := startLifecycle(t, grace, channels, "v1.31.0-k3s1", "v1.31.1-k3s1")
	if l := e.lines()["1.31"]; l.Classification != "supported" || l.End != nil || l.Release == nil {
		t.Fatalf("1.31 with no newer line: %+v", l)
	}

	e.push("v1.32.0-k3s1")
	var end time.Time
	e.until("1.31's end set by 1.32's release", func() bool {
		l := e.lines()["1.31"]
		if l.End != nil {
			end = *l.End
		}
		return l.End != nil
	})
	if l := e.lines()["1.31"]; l.Classification != "supported" || !end.Equal(l.End.UTC()) || l.DeprecatedFrom != nil {
		t.Fatalf("1.31 before its end: %+v", l)
	}
	if rel := e.lines()["1.32"].Release; rel == nil || !rel.Add(grace).Equal(end) {
		t.Errorf("1.31 ends %s, want 1.32's release %v + %v", end, rel, grace)
	}
	cluster := []string{"X-SUC-Cluster-ID", "c1", "X-SUC-Latest-Version", "v1.31.0-k3s1"}
	if res, _ := e.do(http.MethodGet, "/v1-release/channels/stable", "", cluster...); res.StatusCode != http.StatusFound || res.Header.Get("Warning") != "" {
		t.Fatalf("before the end: %d, Warning %q", res.StatusCode, res.Header.Get("Warning"))
	}

	// The clock passes the end: nothing is indexed, nothing restarts.
	e.offset.Store(int64(time.Until(end) + time.Second))
	e.srv.Snapshots().Tick()
	e.until("1.31 expired", func() bool { return e.lines()["1.31"].Classification == "expired" })

	want := `299 tidemark "v1.31.0+k3s1 is expired: its line 1.31 ends ` + end.Format(time.DateOnly) + `; move to 1.32"`
	res, _ := e.do(http.MethodGet, "/v1-release/channels/stable", "", cluster...)
	if res.StatusCode != http.StatusFound || res.Header.Get("Warning") != want {
		t.Errorf("302 to a cluster on 1.31: %d, Warning %q, want %q", res.StatusCode, res.Header.Get("Warning"), want)
	}
	res, b := e.do(http.MethodGet, "/v1-release/channels/stable", "", append(cluster, "Accept", "application/json")...)
	var ch openapi.Channel
	if err := json.Unmarshal(b, &ch); err != nil || res.Header.Get("Warning") != want || ch.Running == nil ||
		ch.Running.Version != "v1.31.0+k3s1" || ch.Running.Classification != "expired" || !ch.Running.End.Equal(end) {
		t.Errorf("JSON to a cluster on 1.31: Warning %q, %s (%v)", res.Header.Get("Warning"), b, err)
	}
	if res, _ := e.do(http.MethodGet, "/v1-release/channels/stable", "", "X-SUC-Latest-Version", "v1.32.0-k3s1"); res.Header.Get("Warning") != "" {
		t.Errorf("a cluster on 1.32 is warned: %q", res.Header.Get("Warning"))
	}

	_, b = e.do(http.MethodGet, "/api/v1/sources/k3s/versions/v1.31.1+k3s1", "")
	var v openapi.Version
	if err := json.Unmarshal(b, &v); err != nil || v.Lifecycle == nil || v.Lifecycle.Line != "1.31" || v.Lifecycle.Classification != "expired" ||
		v.Lifecycle.Successor == nil || *v.Lifecycle.Successor != "1.32" {
		t.Errorf("version JSON: %s", b)
	}
	_, b = e.do(http.MethodGet, "/api/v1/channels/old", "")
	if err := json.Unmarshal(b, &ch); err != nil || ch.Lifecycle == nil || ch.Lifecycle.Classification != "expired" || *ch.Version != "v1.31.1+k3s1" {
		t.Errorf("a channel on an expired version keeps answering it and says so: %s", b)
	}

	_, b = e.do(http.MethodGet, "/ui/", "")
	if !bytes.Contains(b, []byte(`<span class="badge lifecycle-expired">expired: its line ends`)) {
		t.Errorf("the console's channels do not show old's expired version:\n%s", b)
	}
	_, b = e.do(http.MethodGet, "/ui/sources/k3s", "")
	for _, want := range []string{`<li data-line="1.31" data-classification="expired">`, `<rect class="expired"`, `<rect class="today"`,
		`; ends <time datetime="` + end.Format(time.RFC3339) + `"`, `<li data-line="1.32" data-classification="supported">`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the source page's timeline lacks %s", want)
		}
	}
	_, b = e.do(http.MethodGet, "/ui/resolve?source=k3s&current=v1.31.0%2Bk3s1", "")
	if !bytes.Contains(b, []byte(`id="warning"`)) || !bytes.Contains(b, []byte("v1.31.0&#43;k3s1 is expired: its line 1.31 ends "+end.Format(time.DateOnly))) {
		t.Errorf("the console's Resolve page does not show the warning:\n%s", b)
	}

	_, b = e.do(http.MethodGet, "/api/v1/channels/stable/releases", "")
	var rel openapi.ChannelReleases
	if err := json.Unmarshal(b, &rel); err != nil {
		t.Fatal(err)
	}
	for _, r := range rel.Releases {
		if dep := strings.HasPrefix(r.Version, "v1.31."); r.IsDeprecated != dep {
			t.Errorf("feed: %s isDeprecated %v, want %v", r.Version, r.IsDeprecated, dep)
		}
	}

	_, b = e.do(http.MethodGet, "/api/upgrades_info/v1/graph?channel=stable", "")
	var g openapi.CincinnatiGraph
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	eol := false
	for _, ce := range g.ConditionalEdges {
		for _, r := range ce.Risks {
			if r.Name == "EndOfLife" && strings.Contains(r.Message, end.Format(time.DateOnly)) {
				for _, ed := range ce.Edges {
					eol = eol || ed.To == "1.31.1+k3s1"
				}
			}
		}
	}
	if !eol {
		t.Errorf("graph: no EndOfLife edge to 1.31.1: %s", b)
	}

	plan := `{"apiVersion":"hooks.runtime.cluster.x-k8s.io/v1alpha1","kind":"GenerateUpgradePlanRequest",
		"fromControlPlaneKubernetesVersion":"v1.31.0+k3s1","toKubernetesVersion":"v1.31.1+k3s1"}`
	_, b = e.do(http.MethodPost, "/capi/hooks.runtime.cluster.x-k8s.io/v1alpha1/generateupgradeplan/k3s", plan, "Content-Type", "application/json")
	if !bytes.Contains(b, []byte(`"status":"Failure"`)) || !bytes.Contains(b, []byte("expired")) || !bytes.Contains(b, []byte(end.Format(time.DateOnly))) {
		t.Errorf("hook to an expired target: %s", b)
	}
}

// TestNoPinOrScheduledChangeStartsOnAnExpiredVersion: a pin or scheduled
// change to an expired version is 422 urn:tidemark:problem:expired naming
// the end, allow_expired is an admin's (403 for anyone else), and the
// admin's pin is audited as allow_expired.
func TestNoPinOrScheduledChangeStartsOnAnExpiredVersion(t *testing.T) {
	channels := []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}
	e := startLifecycle(t, time.Second, channels, "v1.31.0-k3s1", "v1.32.0-k3s1")
	end := e.lines()["1.31"].End
	if end == nil {
		t.Fatal("1.31 has no end")
	}
	e.offset.Store(int64(time.Until(*end) + time.Second))
	e.srv.Snapshots().Tick()
	e.until("1.31 expired", func() bool { return e.lines()["1.31"].Classification == "expired" })

	auth := func(scope string) []string {
		return []string{"Authorization", "Bearer " + e.tokens[scope], "Content-Type", "application/json"}
	}
	res, b := e.do(http.MethodPut, "/api/v1/channels/stable/pin", `{"version":"v1.31.0+k3s1","reason":"old"}`, auth(ScopePromote)...)
	if res.StatusCode != http.StatusUnprocessableEntity || !bytes.Contains(b, []byte("urn:tidemark:problem:expired")) ||
		!bytes.Contains(b, []byte("ended "+end.Format(time.DateOnly))) {
		t.Errorf("pin to an expired version: %d %s", res.StatusCode, b)
	}
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	res, b = e.do(http.MethodPost, "/api/v1/channels/stable/changes", `{"action":"pin","version":"v1.31.0+k3s1","at":"`+at+`"}`, auth(ScopePromote)...)
	if res.StatusCode != http.StatusUnprocessableEntity || !bytes.Contains(b, []byte("urn:tidemark:problem:expired")) {
		t.Errorf("scheduled pin to an expired version: %d %s", res.StatusCode, b)
	}
	res, b = e.do(http.MethodPut, "/api/v1/channels/stable/pin", `{"version":"v1.31.0+k3s1","allow_expired":true}`, auth(ScopePromote)...)
	if res.StatusCode != http.StatusForbidden || !bytes.Contains(b, []byte("urn:tidemark:problem:scope")) {
		t.Errorf("a promoter's allow_expired: %d %s", res.StatusCode, b)
	}
	res, b = e.do(http.MethodPut, "/api/v1/channels/stable/pin", `{"version":"v1.31.0+k3s1","reason":"lab","allow_expired":true}`, auth(ScopeAdmin)...)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("an admin's allow_expired: %d %s", res.StatusCode, b)
	}
	_, b = e.do(http.MethodGet, "/api/v1/channels/stable/history", "")
	if !bytes.Contains(b, []byte("lab (allow_expired)")) {
		t.Errorf("history does not say allow_expired: %s", b)
	}
	if res, _ := e.do(http.MethodPut, "/api/v1/channels/stable/pin", `{"version":"v1.32.0+k3s1"}`, auth(ScopePromote)...); res.StatusCode != http.StatusOK {
		t.Errorf("pin to a supported version: %d", res.StatusCode)
	}
}

// TestALineExpiresOnTheClockAlone: nothing but time passes (no Tick, no
// scan, no request): the snapshot holder's timer rebuilds the source's
// part when 1.31's end (1 s after 1.32 was indexed) comes.
func TestALineExpiresOnTheClockAlone(t *testing.T) {
	channels := []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}
	e := startLifecycle(t, time.Second, channels, "v1.31.0-k3s1")
	e.push("v1.32.0-k3s1")
	e.until("1.31's end set", func() bool { return e.lines()["1.31"].End != nil })
	end := *e.lines()["1.31"].End
	e.until("1.31 expired", func() bool { return e.lines()["1.31"].Classification == "expired" })
	if time.Now().Before(end) {
		t.Errorf("1.31 expired before its end %s", end)
	}
}
