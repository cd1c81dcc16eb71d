package server

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

var stamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)

// claimWorld is one Tidemark with its own Postgres: the property test
// plays the same pins, blocks, polls and reports from inside
// fleet.evidence_networks on two, and reports from outside on one only.
type claimWorld struct {
	env    *pgEnv
	srv    *Server
	base   string
	polled map[string]time.Time
}

func newClaimWorld(t *testing.T) *claimWorld {
	t.Helper()
	env := newPGEnv(t, Options{})
	// "staged" rolls out each change (a pin starts a rollout): half its
	// clusters stay on the rollout's from for the test's length.
	chs := append(k3sChannels(), catalog.Channel{Name: "staged", Source: "k3s", Stream: resolver.Released,
		Rollout: &resolver.RolloutPolicy{Steps: []int{50, 100}, Interval: time.Hour}})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond, NewClustersPerMinute: 100_000,
			EvidenceNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return &claimWorld{env: env, srv: srv, base: runOnLoopback(t, srv, runOpts{}), polled: map[string]time.Time{}}
}

// poll is a channel request from id reporting reported, from address
// from (through the trusted proxy): the answer's version, "" on a 404.
func (w *claimWorld) poll(t *testing.T, channel, id, reported, from string) string {
	t.Helper()
	v, _ := w.pollHeld(t, channel, id, reported, from)
	return v
}

// pollHeld is poll, with the answer's held.
func (w *claimWorld) pollHeld(t *testing.T, channel, id, reported, from string) (string, *openapi.Held) {
	t.Helper()
	w.polled[id] = time.Now()
	req, _ := http.NewRequest(http.MethodGet, w.base+"/v1-release/channels/"+channel, nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-SUC-Cluster-ID", id)
	req.Header.Set("X-SUC-Latest-Version", reported)
	req.Header.Set("X-Forwarded-For", from)
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return "", nil
	}
	var ch openapi.Channel
	if err := json.NewDecoder(res.Body).Decode(&ch); err != nil {
		t.Fatalf("%s asking %s: %d %v", id, channel, res.StatusCode, err)
	}
	return str(ch.Version), ch.Held
}

// served is every channel's served set, read from this world's Postgres
// and snapshot as each door reads it, and its fleet part.
func (w *claimWorld) served(t *testing.T, channels []string) (sets, active map[string][]string) {
	t.Helper()
	awaitRecorded(t, w.env.st, w.polled)
	now := time.Now()
	active, err := w.env.st.FleetActiveServed(context.Background(), now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, vs := range active {
		slices.Sort(vs)
	}
	snap := w.srv.Cur.Load().Snap
	out := map[string][]string{}
	for _, ch := range channels {
		set, err := snap.ServedSet(ch, active[ch], now)
		if err != nil {
			t.Fatal(err)
		}
		for _, tag := range set {
			out[ch] = append(out[ch], tag.Version.String())
		}
	}
	return out, active
}

// TestNoReportChangesWhatOthersAreServed: for random sequences of pins
// (on a rollout channel, each starts a rollout), blocks and unblocks, polls of well-behaved clusters (each reports what
// it was last answered) and reports of any version under any new cluster
// ID, after every step each channel's served set's fleet part is exactly
// the versions last directed (answered without "held") to active
// clusters inside fleet.evidence_networks; and a second Tidemark that
// gets every step but the reports from outside the networks serves the
// same sets and tells the well-behaved clusters the same; at the end the
// Renovate feed, the update graph and the registry view's tag list agree.
func TestNoReportChangesWhatOthersAreServed(t *testing.T) {
	hostile, calm := newClaimWorld(t), newClaimWorld(t)
	worlds := []*claimWorld{hostile, calm}
	channels := []string{"v1.33", "k3s-released", "staged"}
	versions := []string{"v1.32.9-k3s1", "v1.32.10-k3s1", "v1.33.4-k3s1", "v1.33.5-k3s1", "v1.33.6-k3s1", "v1.33.6-k3s2",
		"v1.34.0-k3s1", "v1.34.2-k3s2", "v1.34.3-rc1-k3s1", "v9.9.9", "nonsense"}
	rng := rand.New(rand.NewPCG(51, 19))
	runs := map[string]string{} // well-behaved cluster -> what it runs
	for i := range 4 {
		for _, ch := range channels {
			runs[fmt.Sprintf("%s:good-%d", ch, i)] = "v1.33.4-k3s1"
		}
	}
	goods := make([]string, 0, len(runs))
	for id := range runs {
		goods = append(goods, id)
	}
	slices.Sort(goods)
	// directed: what each counted cluster was last directed (an answer
	// without "held"; these channels are not stepwise).
	directed := map[string]string{}
	model := func(id, answer string, held *openapi.Held) {
		if answer != "" && held == nil {
			directed[id] = answer
		}
	}
	wantFleet := func(ch string) []string {
		var out []string
		for id, v := range directed {
			if strings.HasPrefix(id, ch+":") && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		slices.Sort(out)
		return out
	}
	for step := range 60 {
		var what string
		switch k := rng.IntN(10); {
		case k < 4: // a well-behaved cluster polls, in both
			id := goods[rng.IntN(len(goods))]
			ch := id[:len(id)-len(":good-0")]
			answers := []string{calm.poll(t, ch, id, runs[id], "10.0.0.7")}
			got, held := hostile.pollHeld(t, ch, id, runs[id], "10.0.0.7")
			answers = append([]string{got}, answers...)
			model(id, got, held)
			what = fmt.Sprintf("%s polls reporting %s", id, runs[id])
			if answers[0] != answers[1] {
				t.Fatalf("step %d (%s): told %s beside hostile reports, %s without", step, what, answers[0], answers[1])
			}
			if answers[0] != "" {
				runs[id] = answers[0]
			}
		case k < 7: // a made-up report: from inside in both, from outside in one
			ch := channels[rng.IntN(len(channels))]
			id := fmt.Sprintf("%s:made-up-%d", ch, rng.IntN(1_000_000))
			v := versions[rng.IntN(len(versions))]
			what = fmt.Sprintf("%s reports %s from outside", id, v)
			if rng.IntN(2) == 0 {
				what = fmt.Sprintf("%s reports %s from inside", id, v)
				calm.poll(t, ch, id, v, "10.0.0.66")
				got, held := hostile.pollHeld(t, ch, id, v, "10.0.0.66")
				model(id, got, held)
			} else {
				hostile.poll(t, ch, id, v, "192.0.2.66")
			}
		case k < 9: // a pin, in both
			ch, v := channels[rng.IntN(len(channels))], versions[rng.IntN(6)]
			rollback := rng.IntN(4) == 0
			body := fmt.Sprintf(`{"version":%q,"reason":"step %d","rollback":%v,"force":true}`, v, step, rollback)
			var codes []int
			for _, w := range worlds {
				res, _ := send(t, http.MethodPut, w.base+"/api/v1/channels/"+ch+"/pin", w.env.tokens["ci-promote"], body)
				codes = append(codes, res.StatusCode)
			}
			what = fmt.Sprintf("pin %s to %s (rollback %v): %v", ch, v, rollback, codes)
		default: // a block or an unblock, in both
			v := versions[rng.IntN(6)]
			method := []string{http.MethodPut, http.MethodDelete}[rng.IntN(2)]
			for _, w := range worlds {
				send(t, method, w.base+"/api/v1/sources/k3s/versions/"+v+"/block", w.env.tokens["ci-promote"], `{"reason":"property"}`)
				if err := w.srv.Reload(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			what = fmt.Sprintf("%s block of %s", method, v)
		}
		a, fleetPart := hostile.served(t, channels)
		b, _ := calm.served(t, channels)
		for _, ch := range channels {
			if !slices.Equal(a[ch], b[ch]) {
				t.Fatalf("step %d (%s): %s serves %v beside reports from outside, %v without", step, what, ch, a[ch], b[ch])
			}
			if want := wantFleet(ch); !slices.Equal(fleetPart[ch], want) {
				t.Fatalf("step %d (%s): %s's fleet part %v, the directed answers say %v", step, what, ch, fleetPart[ch], want)
			}
		}
	}
	// The doors, once both worlds' replicas read their fleet again.
	time.Sleep(2500 * time.Millisecond)
	for _, ch := range channels {
		for _, door := range []string{"/api/v1/channels/" + ch + "/releases", "/api/upgrades_info/v1/graph?channel=" + ch, "/v2/channels/" + ch + "/k3s-upgrade/tags/list"} {
			_, x := get(t, &httptest.Server{URL: hostile.base}, door)
			_, y := get(t, &httptest.Server{URL: calm.base}, door)
			// Index times differ between the two worlds; nothing else may.
			if stamp.ReplaceAllString(string(x), "<t>") != stamp.ReplaceAllString(string(y), "<t>") {
				t.Errorf("%s beside hostile reports:\n%.600s\nwithout:\n%.600s", door, x, y)
			}
		}
	}
}
