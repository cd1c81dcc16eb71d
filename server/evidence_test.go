package server

import (
	"os"
	"regexp"

	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestEvidenceFromAFleetOfUpgradeControllers: ten SUC-style clusters on
// v1.33.5 ask channel v1.33 (which answers v1.33.6+k3s2): all are told
// it; six upgrade and report it; the four that stay, told it over an hour
// ago, are stuck; a cluster first seen after the channel first told it
// does not count. The figures are exact, over HTTP, from Postgres.
func TestEvidenceFromAFleetOfUpgradeControllers(t *testing.T) {
	env := newPGEnv(t, Options{})
	reader, err := env.st.CreateToken(context.Background(), "dash", []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: k3sChannels(),
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	polled := map[string]time.Time{}
	poll := func(id, reported string) {
		t.Helper()
		polled[id] = time.Now()
		req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/v1.33", nil)
		req.Header.Set("X-SUC-Cluster-ID", id)
		req.Header.Set("X-SUC-Latest-Version", reported)
		res, err := noRedirects.Do(req)
		if err != nil || res.StatusCode != http.StatusFound {
			t.Fatalf("%s: %v %v", id, res, err)
		}
		res.Body.Close()
	}
	pin := func(method, body string) {
		t.Helper()
		if res, b := send(t, method, base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], body); res.StatusCode != 200 {
			t.Fatalf("%s pin: %d %s", method, res.StatusCode, b)
		}
	}
	// The fleet exists before the release: the channel answers v1.33.5.
	pin(http.MethodPut, `{"version":"v1.33.5+k3s1","reason":"before the release"}`)
	for i := range 10 {
		poll(fmt.Sprintf("c-%02d", i), "v1.33.5-k3s1")
	}
	awaitRecorded(t, env.st, polled)
	// The release: the channel now tells everyone v1.33.6+k3s2.
	pin(http.MethodDelete, "")
	for i := range 10 {
		poll(fmt.Sprintf("c-%02d", i), "v1.33.5-k3s1")
	}
	awaitRecorded(t, env.st, polled)
	for i := range 6 {
		poll(fmt.Sprintf("c-%02d", i), "v1.33.6-k3s2")
	}
	poll("late", "v1.33.5-k3s1") // first seen after the channel first told v1.33.6+k3s2
	awaitRecorded(t, env.st, polled)
	// The four that stayed were told an hour and more ago.
	conn, err := pgx.Connect(context.Background(), env.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `update fleet set directed_since = directed_since - interval '2 hours',
		first_seen = first_seen - interval '3 hours' where cluster like 'c-%'`); err != nil {
		t.Fatal(err)
	}
	evidencePass(t, env, srv, 0)
	var ev openapi.Evidence
	getJSON(t, base+"/api/v1/channels/v1.33/evidence?version=v1.33.6-k3s2", reader, &ev)
	if ev.Version != "v1.33.6+k3s2" || ev.Told != 10 || ev.Adopted != 6 || ev.Stuck != 4 || ev.FirstTold == nil || ev.Halts != 0 {
		t.Fatalf("evidence %+v, want told 10, adopted 6, stuck 4 (the late cluster does not count)", ev)
	}
	// The six adopters were told two hours before they reported it (the
	// update above moved when they were told).
	if ev.AdoptionP50Seconds == nil || *ev.AdoptionP50Seconds != 7200 {
		t.Errorf("adoption p50 %v, want 7200", ev.AdoptionP50Seconds)
	}
	// docs/fleet.md shows this answer; all but first_told must match.
	doc, err := os.ReadFile("../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	example := regexp.MustCompile("(?s)```json\n(" + regexp.QuoteMeta(`{"version":"v1.33.6+k3s2","told"`) + ".*?)```").FindSubmatch(doc)
	if example == nil {
		t.Fatal("docs/fleet.md has no evidence example")
	}
	var want openapi.Evidence
	if err := json.Unmarshal(example[1], &want); err != nil {
		t.Fatalf("docs/fleet.md's evidence example: %v", err)
	}
	want.FirstTold = ev.FirstTold
	if d := cmp.Diff(want, ev); d != "" {
		t.Errorf("docs/fleet.md's evidence example differs from the answer (-doc +answer):\n%s", d)
	}
	var list openapi.EvidenceList
	getJSON(t, base+"/api/v1/channels/v1.33/evidence", reader, &list)
	// Both versions it answered in the last 30 days: v1.33.5+k3s1 before
	// the release (no active cluster is told it now), v1.33.6+k3s2 since.
	if len(list.Versions) != 2 || list.Versions[0].Version != "v1.33.5+k3s1" || list.Versions[0].Told != 0 || list.Versions[1].Told != 10 {
		b, _ := json.Marshal(list)
		t.Errorf("evidence list %s", b)
	}
	// A told version whose tag is deleted from the registry is no longer
	// listed: only versions the source indexes are.
	var tags []resolver.Tag
	for _, name := range k3sTags() {
		if name != "v1.33.5-k3s1" {
			tags = append(tags, env.src.Classify(name))
		}
	}
	if _, err := env.st.ApplyScan(context.Background(), resolver.ScanResult{Source: "k3s", Complete: true, Tags: tags}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	getJSON(t, base+"/api/v1/channels/v1.33/evidence", reader, &list)
	if len(list.Versions) != 1 || list.Versions[0].Version != "v1.33.6+k3s2" {
		b, _ := json.Marshal(list)
		t.Errorf("evidence list after v1.33.5-k3s1 was deleted: %s, want v1.33.6+k3s2 alone", b)
	}
	if res, _ := send(t, http.MethodGet, base+"/api/v1/channels/v1.33/evidence", "", ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("evidence without a token: %d, want 401", res.StatusCode)
	}
	// fleet.stuck_after 3h: told two hours ago is not stuck yet.
	patient, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: k3sChannels(),
		Fleet: fleet.Options{Store: env.st, StuckAfter: 3 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	evidencePass(t, env, srv, 3*time.Hour)
	getJSON(t, runOnLoopback(t, patient, runOpts{})+"/api/v1/channels/v1.33/evidence?version=v1.33.6-k3s2", reader, &ev)
	if ev.Told != 10 || ev.Adopted != 6 || ev.Stuck != 0 {
		t.Errorf("evidence with stuck_after 3h: %+v, want told 10, adopted 6, stuck 0", ev)
	}
}

// evidencePass runs the indexing leader's evidence pass once, as serve
// does every 2 s, with fleet.stuck_after stuckAfter (0: the default).
func evidencePass(t *testing.T, env *pgEnv, srv *Server, stuckAfter time.Duration) {
	t.Helper()
	loop, err := promotion.New(promotion.Options{Store: env.st, Snapshot: func() *snapshot.Snapshot { return srv.Cur.Load().Snap },
		StuckAfter: stuckAfter})
	if err != nil {
		t.Fatal(err)
	}
	loop.Round(context.Background())
}

// TestEvidenceCountsOnlyReportsFromEvidenceNetworks: with
// fleet.evidence_networks 10.0.0.0/8 (behind a trusted proxy), clusters
// polling from 10.x count as evidence and those from elsewhere are
// recorded but do not; a cluster's latest request decides.
func TestEvidenceCountsOnlyReportsFromEvidenceNetworks(t *testing.T) {
	u := storetest.URL(t)
	st, src := fleetStoreAt(t, u)
	base := fleetTrustServerOn(t, st, src, fleet.Options{EvidenceNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		[]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	polled := map[string]time.Time{}
	told := func() (n int) {
		t.Helper()
		awaitRecorded(t, st, polled)
		// Every cluster was there before the channel first told its
		// version, so each may vote (the rule is tested above).
		if _, err := conn.Exec(context.Background(), `update fleet set first_seen = first_seen - interval '1 hour'`); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		rows, _, err := st.EvidenceCounts(context.Background(), now.Add(-time.Hour), now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Channel == "stable" {
				n += r.Clusters
			}
		}
		return n
	}
	poll := func(id, from string) {
		polled[id] = time.Now()
		pollAs(t, base, "stable", id, "v1.30.0+k3s1", from)
	}
	for i := range 3 {
		poll(fmt.Sprintf("inside-%d", i), fmt.Sprintf("10.1.1.%d", i))
	}
	for i := range 2 {
		poll(fmt.Sprintf("outside-%d", i), fmt.Sprintf("203.0.113.%d", i))
	}
	if n := told(); n != 3 {
		t.Fatalf("told %d clusters as evidence, want the 3 inside 10.0.0.0/8", n)
	}
	sum, err := st.FleetSummary(context.Background(), "stable", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if recorded := sum.Clusters; recorded != 5 {
		t.Errorf("%d clusters recorded, want all 5 (evidence networks limit evidence, not the fleet)", recorded)
	}
	poll("outside-0", "10.9.9.9")
	if n := told(); n != 4 {
		t.Errorf("after outside-0 polled from 10.9.9.9: told %d, want 4", n)
	}
}
