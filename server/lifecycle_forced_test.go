package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// answer is what channel answers a cluster reporting version (JSON).
func (e *lifecycleEnv) answer(channel, cluster, version string) openapi.Channel {
	e.t.Helper()
	_, b := e.do(http.MethodGet, "/v1-release/channels/"+channel, "",
		"X-SUC-Cluster-ID", cluster, "X-SUC-Latest-Version", version, "Accept", "application/json")
	var ch openapi.Channel
	if err := json.Unmarshal(b, &ch); err != nil || ch.Version == nil {
		e.t.Fatalf("%s to %s on %s: %s (%v)", channel, cluster, version, b, err)
	}
	return ch
}

// window is a daily window from from to to after now (UTC, minutes).
func window(now time.Time, from, to time.Duration) resolver.Window {
	m := func(d time.Duration) int {
		t := now.Add(d).UTC()
		return t.Hour()*60 + t.Minute()
	}
	return resolver.Window{Days: [7]bool{true, true, true, true, true, true, true}, Start: m(from), End: m(to), Location: time.UTC}
}

// TestAnOptedInFleetMovesOffExpiredLinesOneMinorAtATime: with
// upgrade_expired, a cluster on an expired line is directed to the next
// line's newest version (never above the channel's answer), step by step,
// inside its window only, and never under a freeze; each forced answer
// is counted.
func TestAnOptedInFleetMovesOffExpiredLinesOneMinorAtATime(t *testing.T) {
	now := time.Now()
	channels := []catalog.Channel{
		{Name: "open", Source: "k3s", Stream: resolver.Released, UpgradeExpired: true, Windows: []resolver.Window{window(now, -time.Hour, time.Hour)}},
		{Name: "shut", Source: "k3s", Stream: resolver.Released, UpgradeExpired: true, Windows: []resolver.Window{window(now, 2*time.Hour, 3*time.Hour)}},
		{Name: "plain", Source: "k3s", Stream: resolver.Released},
		{Name: "capped", Source: "k3s", Stream: resolver.Released, UpgradeExpired: true, Latest: "v1.31.1+k3s1"},
	}
	e := startLifecycle(t, time.Second, channels, "v1.30.0-k3s1", "v1.31.0-k3s1", "v1.31.1-k3s1", "v1.32.0-k3s1", "v1.33.0-k3s1")
	e.offset.Store(int64(time.Minute))
	e.srv.Snapshots().Tick()
	e.until("1.30 to 1.32 expired", func() bool {
		l := e.lines()
		return l["1.30"].Classification == "expired" && l["1.32"].Classification == "expired" && l["1.33"].Classification == "supported"
	})

	for _, step := range [][2]string{{"v1.30.0+k3s1", "v1.31.1+k3s1"}, {"v1.31.1+k3s1", "v1.32.0+k3s1"}, {"v1.32.0+k3s1", "v1.33.0+k3s1"}, {"v1.33.0+k3s1", "v1.33.0+k3s1"}} {
		if got := e.answer("open", "c1", step[0]); *got.Version != step[1] || got.Held != nil {
			t.Errorf("open, from %s: %s held %+v, want %s", step[0], *got.Version, got.Held, step[1])
		}
	}
	if got := e.answer("shut", "c2", "v1.30.0+k3s1"); *got.Version != "v1.30.0+k3s1" || got.Held == nil || got.Held.Reason != "window" {
		t.Errorf("outside its window: %s held %+v, want it to stay, held for the window", *got.Version, got.Held)
	}
	if got := e.answer("plain", "c3", "v1.30.0+k3s1"); *got.Version != "v1.33.0+k3s1" {
		t.Errorf("without upgrade_expired: %s, want the channel's usual answer", *got.Version)
	}
	if got := e.answer("capped", "c4", "v1.31.0+k3s1"); *got.Version != "v1.31.1+k3s1" {
		t.Errorf("never above the channel's answer: %s", *got.Version)
	}
	if n := forcedCount(t, e, "open"); n != 3 {
		t.Errorf("tidemark_lifecycle_forced_total{channel=open} = %v, want 3", n)
	}
	read := []string{"Authorization", "Bearer " + e.tokens[ScopeAdmin]}
	forcedRecord := func(cluster string) string {
		_, b := e.do(http.MethodGet, "/api/v1/fleet/clusters/"+cluster, "", read...)
		var recs openapi.FleetClusterChannels
		if err := json.Unmarshal(b, &recs); err != nil || len(recs.Channels) != 1 {
			return "?" + string(b)
		}
		return recs.Channels[0].Forced
	}
	e.answer("open", "c6", "v1.31.0+k3s1")
	e.until("the fleet record of a forced answer says forced", func() bool { return forcedRecord("c6") == "expired" })
	if got := forcedRecord("c3"); got != "" {
		t.Errorf("the record of a usual answer says forced %q", got)
	}

	// The fleet on ending lines: c2 (shut) still reports 1.30, c3 (plain)
	// 1.30, c4 (capped) 1.31; c1 (open) is on 1.33.
	ids := func(query string) string {
		_, b := e.do(http.MethodGet, "/api/v1/fleet/clusters?"+query, "", read...)
		var page openapi.FleetClusterPage
		if err := json.Unmarshal(b, &page); err != nil {
			return "?" + string(b)
		}
		var out []string
		for _, c := range page.Clusters {
			out = append(out, c.ID+"@"+c.Channel)
		}
		return strings.Join(out, " ")
	}
	e.until("the fleet lists the clusters on expired lines", func() bool {
		return ids("classification=expired") == "c2@shut c3@plain c4@capped c6@open"
	})
	if got := ids("classification=expired&channel=shut"); got != "c2@shut" {
		t.Errorf("expired on shut: %q", got)
	}
	if got := ids("classification=expired&limit=2"); got != "c2@shut c3@plain" {
		t.Errorf("first page: %q", got)
	}
	if got := ids("classification=expired&after=c3/plain"); got != "c4@capped c6@open" {
		t.Errorf("after c3/plain: %q", got)
	}
	e.until("the fleet metric counts the clusters on expired lines", func() bool {
		return metric(t, e, `tidemark_fleet_lifecycle_clusters{classification="expired",source="k3s"}`) == 4 &&
			metric(t, e, `tidemark_fleet_lifecycle_clusters{classification="supported",source="k3s"}`) == 1
	})
	_, b := e.do(http.MethodGet, "/api/v1/fleet?channel=open", "", read...)
	var sum openapi.FleetSummary
	if err := json.Unmarshal(b, &sum); err != nil || sum.Lifecycle != (openapi.FleetLifecycle{Supported: 1, Expired: 1}) {
		t.Errorf("open's fleet: %s", b)
	}

	// A freeze holds the channel: the cluster stays where it is.
	from, until := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	res, b := e.do(http.MethodPost, "/api/v1/freezes", `{"channels":["open"],"from":"`+from+`","until":"`+until+`","reason":"holidays"}`,
		"Authorization", "Bearer "+e.tokens[ScopeAdmin], "Content-Type", "application/json")
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("freeze: %d %s", res.StatusCode, b)
	}
	e.until("the freeze holds the channel", func() bool {
		got := e.answer("open", "c5", "v1.30.0+k3s1")
		return *got.Version == "v1.30.0+k3s1" && got.Held != nil && got.Held.Reason == "freeze"
	})
}

// forcedCount reads tidemark_lifecycle_forced_total{channel}.
func forcedCount(t *testing.T, e *lifecycleEnv, channel string) float64 {
	return metric(t, e, `tidemark_lifecycle_forced_total{channel="`+channel+`"}`)
}

// metric reads one series from /metrics (0 when absent).
func metric(t *testing.T, e *lifecycleEnv, series string) float64 {
	t.Helper()
	_, b := e.do(http.MethodGet, "/metrics", "")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			var n float64
			if _, err := fmt.Sscan(rest, &n); err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	return 0
}
