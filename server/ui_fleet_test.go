package server

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestConsoleShowsFleetCounts seeds the fleet through the store and reads
// the counts and the chart as plain HTML, without a token: aggregate
// counts only, never a cluster ID.
func TestConsoleShowsFleetCounts(t *testing.T) {
	env := newPGEnv(t, Options{})
	seedFleet(t, env)
	_, ts, _ := env.serve(env.st, Options{Fleet: fleet.Options{Store: env.st}})

	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"the channel list counts clusters and active ones per channel", "/ui/", []string{
			`<th scope="col">Fleet</th>`,
			`<td data-label="Fleet" class="fleet"><span class="n">4</span> clusters, <span class="n">3</span> active</td>`,
			`<td data-label="Fleet" class="fleet"><span class="n">1</span> cluster, <span class="n">1</span> active</td>`,
			`<td data-label="Fleet" class="fleet"><span class="muted">no clusters</span></td>`,
		}},
		{"the channel page charts the fleet by version, newest first", "/ui/channels/v1.33", []string{
			`<span class="n">4</span> clusters recorded, <span class="n">3</span> active; 1 reported no version.`,
			`<table class="fleet-chart cards" id="fleet-chart">`,
			// v1.33.6+k3s2: none report it, all four were answered it; the
			// chart's longest bar.
			`<tr data-version="v1.33.6+k3s2">`,
			`<span class="version">v1.33.6+k3s2</span> <span class="badge pinned">channel's version</span>`,
			`<td data-label="Served" class="bar-cell served"><span class="bar-line"><span class="n">4</span><svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="track" width="100" height="10"/><rect class="fill" width="100" height="10"/>`,
			`<tr data-version="v1.33.5+k3s1">`,
			`<td data-label="Reporting" class="bar-cell reported"><span class="bar-line"><span class="n">2</span><svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true" focusable="false"><rect class="track" width="100" height="10"/><rect class="fill" width="50" height="10"/>`,
		}},
		{"a channel without clusters says so", "/ui/channels/v1.99", []string{
			`<span class="n">0</span> clusters recorded, <span class="n">0</span> active.`, "No cluster has reported a version",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, ts, tc.path)
			text := html.UnescapeString(string(body))
			if res.StatusCode != 200 {
				t.Fatalf("GET %s: %d\n%.600s", tc.path, res.StatusCode, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("GET %s: no %q in the page", tc.path, w)
				}
			}
			if strings.Contains(text, "secret-cluster") {
				t.Errorf("GET %s names a cluster without a token", tc.path)
			}
		})
	}
	t.Run("the rows in the order of the versions, reported and served merged", func(t *testing.T) {
		_, body := get(t, ts, "/ui/channels/v1.33")
		got := regexp.MustCompile(`<tr data-version="([^"]+)">`).FindAllStringSubmatch(html.UnescapeString(string(body)), -1)
		var order []string
		for _, m := range got {
			order = append(order, m[1])
		}
		if want := "v1.33.6+k3s2 v1.33.5+k3s1 v1.33.1+k3s1"; strings.Join(order, " ") != want {
			t.Errorf("chart rows %v, want %s", order, want)
		}
	})
	t.Run("without a fleet store there is no fleet column and no chart", func(t *testing.T) {
		_, body := get(t, env.ts, "/ui/")
		if strings.Contains(string(body), `data-label="Fleet"`) || strings.Contains(string(body), `>Fleet</th>`) {
			t.Errorf("the list shows a fleet column for a server that records none")
		}
		if _, body := get(t, env.ts, "/ui/channels/v1.33"); strings.Contains(string(body), `id="fleet"`) {
			t.Errorf("the channel page shows a fleet section for a server that records none")
		}
	})
}

// seedFleet records, through the store, four clusters on v1.33 (two
// reporting v1.33.5+k3s1, one v1.33.1+k3s1, one nothing; one stale, all
// answered v1.33.6+k3s2) and one on stable.
func seedFleet(t *testing.T, env *pgEnv) {
	t.Helper()
	now := time.Now()
	var batch []resolver.Sighting
	for _, s := range []struct {
		id, reported string
		at           time.Time
	}{
		{"secret-cluster-a", "v1.33.5+k3s1", now}, {"secret-cluster-b", "v1.33.5+k3s1", now},
		{"secret-cluster-c", "v1.33.1+k3s1", now.Add(-3 * time.Hour)}, {"secret-cluster-d", "", now},
	} {
		batch = append(batch, resolver.Sighting{Cluster: s.id, Channel: "v1.33", Reported: s.reported, Served: "v1.33.6+k3s2", At: s.at})
	}
	batch = append(batch, resolver.Sighting{Cluster: "secret-cluster-a", Channel: "stable", Reported: "v1.21.2+k3s1", Served: "v1.21.2+k3s1", At: now})
	if _, err := env.st.RecordFleet(context.Background(), batch); err != nil {
		t.Fatalf("RecordFleet: %v", err)
	}
}

// TestConsoleChannelShowsStepwise: a stepwise channel's page says how it
// answers clusters, and a channel's own soak is shown as its own.
func TestConsoleChannelShowsStepwise(t *testing.T) {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	soak := 72 * time.Hour
	channels := append(k3sChannels(),
		catalog.Channel{Name: "climb", Source: "k3s", Stream: resolver.Released, Stepwise: true, Settle: 30 * time.Minute, Soak: &soak})
	snap := snapshot.New(channels, []catalog.SourceData{sourceData(src, k3sTags(), nil)}, nil, loadedAt)
	_, ts, _ := newTestServer(t, snap, "")
	for path, want := range map[string][]string{
		"/ui/channels/climb": {
			`<dd id="stepwise"><span class="badge stepwise">stepwise</span> each cluster climbs one minor at a time from the version it reports; <span class="badge settle">settle 30m</span> on each version before its next step</dd>`,
			`<dd id="soak">72h <span class="muted">(this channel's own, in place of the source's)</span></dd>`,
		},
		"/ui/channels/v1.33": nil,
	} {
		_, body := get(t, ts, path)
		text := html.UnescapeString(string(body))
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("GET %s: no %q in the page", path, w)
			}
		}
		if want == nil && (strings.Contains(text, `id="stepwise"`) || strings.Contains(text, `id="soak"`)) {
			t.Errorf("GET %s: a plain channel shows stepwise or soak", path)
		}
	}
}
