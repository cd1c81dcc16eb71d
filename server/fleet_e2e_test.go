package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// fleetTags: four minors, several patches and builds each, and a newer
// release candidate the released stream never serves.
var fleetTags = []string{
	"v1.30.0-k3s1", "v1.30.4-k3s1", "v1.31.0-k3s1", "v1.31.7-k3s1", "v1.31.7-k3s2",
	"v1.32.3-k3s1", "v1.32.9-k3s1", "v1.33.0-k3s1", "v1.33.6-k3s1", "v1.34.0-rc1-k3s1",
}

// The climb every cluster must take from v1.30.0: one minor a step, each
// the newest of its minor.
var fleetClimb = []string{"v1.30.0-k3s1", "v1.31.7-k3s2", "v1.32.9-k3s1", "v1.33.6-k3s1"}

const fleetSettle = 400 * time.Millisecond

// TestFleetOfUpgradeControllersClimbsStepwise plays system-upgrade-controller
// clients against a stepwise channel over real HTTP on a real database:
// each polls without following redirects, takes filepath.Base of Location,
// turns "+" into "-", "upgrades" to that tag and reports it on the next
// poll. Every step must be one minor, never down, and only after the
// cluster has reported its version for settle. Client i stops after i%4
// steps; the fleet API must then count exactly what the clients did.
func TestFleetOfUpgradeControllersClimbsStepwise(t *testing.T) {
	ctx := context.Background()
	st, src := fleetStore(t)
	reader, err := st.CreateToken(ctx, "fleet-reader", []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	ch := catalog.Channel{Name: "latest", Source: "k3s", Stream: resolver.Released, Stepwise: true, Settle: fleetSettle,
		Redirect: "https://github.com/k3s-io/k3s/releases/tag/"}
	srv, err := New(Options{Data: st, Sources: []catalog.Source{src}, Channels: []catalog.Channel{ch}, Store: st,
		Fleet: fleet.Options{Store: st, FlushEvery: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	poll := func(id, reported string) (int, string, string) {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/latest?current="+fleetClimb[0], nil)
		req.Header.Set("X-SUC-Cluster-ID", id)
		if reported != "" {
			req.Header.Set("X-SUC-Latest-Version", reported)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, "", ""
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusFound {
			return res.StatusCode, "", string(body)
		}
		// system-upgrade-controller's reading of the answer.
		return res.StatusCode, strings.ReplaceAll(filepath.Base(res.Header.Get("Location")), "+", "-"), ""
	}

	const clusters = 12
	final := make([]string, clusters)
	var wg sync.WaitGroup
	for i := range clusters {
		wg.Go(func() {
			id := fmt.Sprintf("cluster-%02d", i)
			limit := i % 4
			cur, reported := fleetClimb[0], "" // the first poll sends no version header, only ?current=
			since := time.Now()
			for steps := 0; steps < limit; {
				code, tag, body := poll(id, reported)
				if code != http.StatusFound {
					t.Errorf("%s on %s: %d %s", id, cur, code, body)
					return
				}
				reported = cur
				if tag == cur {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if held := time.Since(since); held < fleetSettle {
					t.Errorf("%s moved from %s to %s after %s, before settle %s", id, cur, tag, held, fleetSettle)
				}
				if tag != fleetClimb[steps+1] {
					t.Errorf("%s on %s was sent %s, want %s (one minor, the newest of it)", id, cur, tag, fleetClimb[steps+1])
					return
				}
				cur, since = tag, time.Now()
				steps++
			}
			// Upgraded: one more poll reports the version it now runs.
			if code, tag, body := poll(id, cur); code != http.StatusFound || tag != cur {
				t.Errorf("%s right after upgrading to %s: %d %s %s, want to be held", id, cur, code, tag, body)
			}
			final[i] = cur
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Without a version a stepwise channel never guesses.
	req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/latest", nil)
	req.Header.Set("X-SUC-Cluster-ID", "newcomer")
	if res, err := client.Do(req); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("no reported version: %v %v, want 404", res, err)
	} else {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		// A problem detail (the contract's words) that channelserver's
		// clients read too.
		var body struct {
			Type, Code, Message, Title, Detail string
			Status                             int
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("404 Content-Type %q, want application/problem+json", ct)
		}
		if err := json.Unmarshal(b, &body); err != nil || body.Status != 404 || body.Title == "" || body.Code != "NotFound" ||
			!strings.Contains(body.Detail, "?current=") || body.Message != body.Detail {
			t.Fatalf("404 body is not a problem naming ?current= and channelserver's error: %s (%v)", b, err)
		}
	}
	// The channel object still shows the channel's version.
	var chJSON openapi.Channel
	getJSON(t, base+"/api/v1/channels/latest", "", &chJSON)
	if str(chJSON.Version) != "v1.33.6+k3s1" {
		t.Fatalf("channel object shows %s, want v1.33.6+k3s1", str(chJSON.Version))
	}

	want := map[string]int{}
	for _, v := range final {
		want[strings.Replace(v, "-k3s", "+k3s", 1)]++
	}
	var sum openapi.FleetSummary
	deadline := time.Now().Add(5 * time.Second)
	for {
		getJSON(t, base+"/api/v1/fleet?channel=latest", reader, &sum)
		if sum.Clusters == clusters+1 && countsOf(sum.Versions)[fleetVersion(fleetClimb[0])] == want[fleetVersion(fleetClimb[0])] || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The newcomer is a cluster that reported nothing and was served nothing.
	if sum.Clusters != clusters+1 || sum.Active != clusters+1 {
		t.Fatalf("fleet counts %d clusters, %d active; want %d", sum.Clusters, sum.Active, clusters+1)
	}
	if got := countsOf(sum.Versions); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reported versions %v, want %v", got, want)
	}
	if got := countsOf(sum.Served); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("served versions %v, want %v", got, want)
	}
	if sum.Versions[0].Version != "v1.33.6+k3s1" || sum.Versions[len(sum.Versions)-1].Version != "v1.30.0+k3s1" {
		t.Fatalf("versions are not newest first: %+v", sum.Versions)
	}

	// Paging lists every cluster once; a version filter takes a tag.
	var ids []string
	after := ""
	for {
		var page openapi.FleetClusterPage
		getJSON(t, base+"/api/v1/fleet/clusters?channel=latest&limit=5&after="+after, reader, &page)
		for _, c := range page.Clusters {
			ids = append(ids, c.ID)
		}
		if page.Next == nil {
			break
		}
		after = *page.Next
	}
	if len(ids) != clusters+1 {
		t.Fatalf("paged %d clusters, want %d: %v", len(ids), clusters+1, ids)
	}
	var newest openapi.FleetClusterPage
	getJSON(t, base+"/api/v1/fleet/clusters?channel=latest&version=v1.33.6-k3s1", reader, &newest)
	if len(newest.Clusters) != want["v1.33.6+k3s1"] {
		t.Fatalf("clusters on v1.33.6: %d, want %d", len(newest.Clusters), want["v1.33.6+k3s1"])
	}
	var one openapi.FleetClusterChannels
	getJSON(t, base+"/api/v1/fleet/clusters/cluster-03", reader, &one)
	if len(one.Channels) != 1 || str(one.Channels[0].Reported) != "v1.33.6+k3s1" || one.Channels[0].ReportedSince == nil {
		t.Fatalf("cluster-03: %+v", one)
	}

	// Cluster IDs are customer data: not without a token, not in /metrics.
	if res, err := http.Get(base + "/api/v1/fleet?channel=latest"); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("fleet without a token: %v %v, want 401", res, err)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(m), "cluster-0") || !strings.Contains(string(m), "tidemark_fleet_records_written_total") {
		t.Fatalf("/metrics names a cluster or lacks the fleet counters")
	}
}

func fleetVersion(tag string) string { return strings.Replace(tag, "-k3s", "+k3s", 1) }

func countsOf(cs []openapi.VersionCount) map[string]int {
	out := map[string]int{}
	for _, c := range cs {
		out[c.Version] = c.Clusters
	}
	return out
}

func getJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	res, b := send(t, http.MethodGet, url, token, "")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, res.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// fleetStore is a fresh database with source k3s indexing fleetTags.
func fleetStore(t *testing.T) (*store.Store, catalog.Source) {
	t.Helper()
	return fleetStoreAt(t, storetest.URL(t))
}

// fleetStoreAt is fleetStore on the database at url.
func fleetStoreAt(t *testing.T, url string) (*store.Store, catalog.Source) {
	t.Helper()
	ctx := context.Background()
	st := openStore(t, url)
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		t.Fatal(err)
	}
	var tags []resolver.Tag
	for _, n := range fleetTags {
		tags = append(tags, src.Classify(n))
	}
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "k3s", Complete: true, Tags: tags}); err != nil {
		t.Fatal(err)
	}
	return st, src
}
