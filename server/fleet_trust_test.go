package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
)

// fleetTrustServer runs a replica with one stepwise channel ("latest") and
// one plain one ("stable") on a real database, with fleet options fo and
// trusted proxies; it returns the base URL and the store.
func fleetTrustServer(t *testing.T, fo fleet.Options, trusted []netip.Prefix) (string, *store.Store) {
	t.Helper()
	st, src := fleetStore(t)
	return fleetTrustServerOn(t, st, src, fo, trusted), st
}

// fleetTrustServerOn is fleetTrustServer on st and its source src.
func fleetTrustServerOn(t *testing.T, st *store.Store, src catalog.Source, fo fleet.Options, trusted []netip.Prefix) string {
	t.Helper()
	fo.Store = st
	if fo.FlushEvery == 0 {
		fo.FlushEvery = 50 * time.Millisecond
	}
	srv, err := New(Options{Data: st, Sources: []catalog.Source{src}, Store: st, Fleet: fo, TrustedProxies: trusted,
		Channels: []catalog.Channel{
			{Name: "latest", Source: "k3s", Stream: resolver.Released, Stepwise: true, Settle: time.Hour},
			{Name: "stable", Source: "k3s", Stream: resolver.Released},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return runOnLoopback(t, srv, runOpts{})
}

func pollAs(t *testing.T, base, channel, id, reported, forwardedFor string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/"+channel, nil)
	req.Header.Set("X-SUC-Cluster-ID", id)
	if reported != "" {
		req.Header.Set("X-SUC-Latest-Version", reported)
	}
	if forwardedFor != "" {
		req.Header.Set("X-Forwarded-For", forwardedFor)
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func countClusters(t *testing.T, st *store.Store, channel string) int {
	t.Helper()
	n := 0
	if err := st.FleetMembers(context.Background(), func(ch, _ string) {
		if ch == channel {
			n++
		}
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAFloodOfClusterIDsFromOneAddressIsBounded: random cluster IDs and
// versions from one address are answered, but only new_clusters_per_minute
// of them are recorded; the rest are counted as reason="rate", and made-up
// versions are one "other" series (issue 24 item 2).
func TestAFloodOfClusterIDsFromOneAddressIsBounded(t *testing.T) {
	base, st := fleetTrustServer(t, fleet.Options{NewClustersPerMinute: 20, ActiveWindow: 2 * time.Second}, nil)
	const flood = 500
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := w; i < flood; i += 10 {
				reported := fmt.Sprintf("v9.%d.%d", i, i) // parses, never indexed
				if code := pollAs(t, base, "stable", fmt.Sprintf("flood-%04d", i), reported, ""); code != http.StatusFound {
					t.Errorf("flood request %d answered %d, want 302 as usual", i, code)
				}
			}
		})
	}
	wg.Wait()
	// At least the 20 admitted, then exactly those: a timeout says how
	// many arrived and what was dropped (a flush the database did not take
	// in time is dropped and counted as "database").
	deadline := time.Now().Add(10 * time.Second)
	for n := countClusters(t, st, "stable"); n < 20; n = countClusters(t, st, "stable") {
		if time.Now().After(deadline) {
			t.Fatalf("%d of the 20 admitted clusters recorded after 10s; %s", n, grepLines(metricsText(t, base), "tidemark_fleet_dropped_total"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := countClusters(t, st, "stable"); n != 20 {
		t.Errorf("%d clusters recorded from one address, want 20", n)
	}
	m := metricsText(t, base)
	if !strings.Contains(m, `tidemark_fleet_dropped_total{reason="rate"} 480`) {
		t.Errorf("metrics lack 480 rate drops:\n%s", grepLines(m, "tidemark_fleet_dropped_total"))
	}
	waitUntil(t, "the made-up versions' one series", func() bool {
		return strings.Contains(metricsText(t, base), `tidemark_fleet_clusters{channel="stable",version="other"} 20`)
	})
	if n := strings.Count(metricsText(t, base), "tidemark_fleet_clusters{"); n != 1 {
		t.Errorf("%d tidemark_fleet_clusters series, want 1", n)
	}
	// A known cluster still updates, past the limit.
	var known string
	if err := st.FleetMembers(context.Background(), func(_, id string) { known = id }); err != nil {
		t.Fatal(err)
	}
	if code := pollAs(t, base, "stable", known, "v1.33.6+k3s1", ""); code != http.StatusFound {
		t.Fatalf("known cluster answered %d", code)
	}
	waitUntil(t, "the known cluster's update", func() bool {
		recs, err := st.FleetCluster(context.Background(), known)
		return err == nil && len(recs) == 1 && recs[0].Reported == "v1.33.6+k3s1"
	})
}

// TestTheClusterCapHoldsAcrossAddresses: ten addresses behind a trusted
// proxy, each admitted on its own, stop at max_clusters (reason="cap").
func TestTheClusterCapHoldsAcrossAddresses(t *testing.T) {
	base, st := fleetTrustServer(t, fleet.Options{MaxClusters: 5}, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})
	for i := range 10 {
		// The client's own X-Forwarded-For claim (left of the real hop) is
		// ignored; the rightmost untrusted hop is the client.
		xff := fmt.Sprintf("203.0.113.99, 198.51.100.%d", i+1)
		if code := pollAs(t, base, "stable", fmt.Sprintf("c-%d", i), "", xff); code != http.StatusFound {
			t.Fatalf("request %d answered %d", i, code)
		}
	}
	waitUntil(t, "five records", func() bool { return countClusters(t, st, "stable") == 5 })
	time.Sleep(200 * time.Millisecond)
	if n := countClusters(t, st, "stable"); n != 5 {
		t.Errorf("%d clusters recorded, want the cap of 5", n)
	}
	if m := metricsText(t, base); !strings.Contains(m, `tidemark_fleet_dropped_total{reason="cap"} 5`) {
		t.Errorf("metrics lack 5 cap drops:\n%s", grepLines(m, "tidemark_fleet_dropped_total"))
	}
}

// TestALongReportedVersionPoisonsNoBatch: a 3,000-character
// X-SUC-Latest-Version counts as absent, and the records flushed with it
// are all written (issue 24 item 3).
func TestALongReportedVersionPoisonsNoBatch(t *testing.T) {
	base, st := fleetTrustServer(t, fleet.Options{FlushEvery: 300 * time.Millisecond}, nil)
	long := "v1.33.6-" + strings.Repeat("a", 3000)
	pollAs(t, base, "stable", "poison", long, "")
	for i := range 5 {
		pollAs(t, base, "stable", fmt.Sprintf("good-%d", i), "v1.33.6+k3s1", "")
	}
	// At the limit a reported version counts; one character past it, not.
	at := "v1.33.6-" + strings.Repeat("b", 128-len("v1.33.6-"))
	pollAs(t, base, "stable", "at-limit", at, "")
	pollAs(t, base, "stable", "past-limit", at+"b", "")
	waitUntil(t, "eight records", func() bool { return countClusters(t, st, "stable") == 8 })
	for id, want := range map[string]string{"poison": "", "at-limit": at, "past-limit": ""} {
		recs, err := st.FleetCluster(context.Background(), id)
		if err != nil || len(recs) != 1 || recs[0].Reported != want {
			t.Errorf("%s record %+v (%v), want reported %q", id, recs, err, want)
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
