package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/core"
)

const (
	rolloutP        = "v1.33.0+k3s1"
	rolloutN        = "v1.33.1+k3s1"
	rolloutClusters = 1000
)

// rolloutReplica is one server of the proof, on its own store (so that it
// hears the other's notifications) and its own listener.
type rolloutReplica struct {
	name string
	base string
}

func startRolloutReplica(t *testing.T, url, name string, src catalog.Source, ch catalog.Channel, leading bool) rolloutReplica {
	t.Helper()
	st := openStore(t, url)
	srv, err := New(Options{Data: st, Sources: []catalog.Source{src}, Channels: []catalog.Channel{ch}, Store: st,
		// A thousand clusters from one loopback address: admission's rate per
		// address would refuse most of them.
		Fleet:    fleet.Options{Store: st, FlushEvery: 100 * time.Millisecond, NewClustersPerMinute: 1 << 20},
		Rollouts: RolloutOptions{Store: st}})
	if err != nil {
		t.Fatal(err)
	}
	return rolloutReplica{name: name, base: runOnLoopback(t, srv, runOpts{Changes: st.ListenChanges,
		Leading: func() bool { return leading }, Every: 50 * time.Millisecond, CountEvery: 100 * time.Millisecond})}
}

var rolloutClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     &http.Transport{MaxIdleConnsPerHost: 64},
}

// sweep asks the channel URL once per cluster, as system-upgrade-controller
// would, and returns the version each was sent ("" for no cluster ID).
func (r rolloutReplica) sweep(t *testing.T, ids []string) map[string]string {
	t.Helper()
	out := make(map[string]string, len(ids)+1)
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for id := range work {
				req, _ := http.NewRequest(http.MethodGet, r.base+"/v1-release/channels/stable", nil)
				if id != "" {
					req.Header.Set("X-SUC-Cluster-ID", id)
				}
				res, err := rolloutClient.Do(req)
				if err != nil {
					t.Error(err)
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusFound {
					t.Errorf("%s: cluster %q: %d", r.name, id, res.StatusCode)
					continue
				}
				v := strings.Replace(path.Base(res.Header.Get("Location")), "%2B", "+", 1)
				mu.Lock()
				out[id] = v
				mu.Unlock()
			}
		})
	}
	for _, id := range append([]string{""}, ids...) {
		work <- id
	}
	close(work)
	wg.Wait()
	return out
}

func (r rolloutReplica) call(t *testing.T, method, p, token, body string) (int, []byte) {
	t.Helper()
	res, b := send(t, method, r.base+p, token, body)
	return res.StatusCode, b
}

func (r rolloutReplica) rollout(t *testing.T) openapi.Rollout {
	t.Helper()
	code, b := r.call(t, http.MethodGet, "/api/v1/channels/stable/rollout", "", "")
	if code != http.StatusOK {
		t.Fatalf("%s: GET rollout: %d %s", r.name, code, b)
	}
	var ro openapi.Rollout
	if err := json.Unmarshal(b, &ro); err != nil {
		t.Fatal(err)
	}
	return ro
}

// TestRolloutOfAThousandClustersOnTwoReplicas is the proof of CONTRACT
// section 7: 1,000 clusters ask two replicas on one database while a
// version indexed rolls out in 1-second steps. At every step both
// replicas send exactly the clusters with bucket < percent the new
// version; pause holds, advance moves on, an Alertmanager alert halts
// (everyone back on the old version), resume continues, and no cluster
// that got the new version ever goes back while the rollout is not halted.
func TestRolloutOfAThousandClustersOnTwoReplicas(t *testing.T) {
	ctx := context.Background()
	st, url, src, scan := k3sDatabase(t)
	scan("v1.33.0-k3s1")
	token, err := st.CreateToken(ctx, "release", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	steps := []int{10, 40, 70, 100}
	ch := catalog.Channel{Name: "stable", Source: "k3s", Stream: resolver.Released, Redirect: "https://example.com/k3s/",
		Rollout: &resolver.RolloutPolicy{Steps: steps, Interval: time.Second}}
	a := startRolloutReplica(t, url, "replica A (leader)", src, ch, true)
	b := startRolloutReplica(t, url, "replica B", src, ch, false)
	replicas := []rolloutReplica{a, b}

	ids := make([]string, rolloutClusters)
	for i := range ids {
		ids[i] = fmt.Sprintf("cluster-%04d", i)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("waited 5s for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The leader records what the channel serves before anything rolls out.
	waitFor("the baseline", func() bool {
		states, err := st.LoadStates(ctx)
		return err == nil && states["stable"].Rollout != nil
	})
	if code, _ := a.call(t, http.MethodGet, "/api/v1/channels/stable/rollout", "", ""); code != http.StatusNotFound {
		t.Fatalf("rollout before any change: %d, want 404", code)
	}

	// A new version is indexed: the leader starts its rollout.
	scan("v1.33.0-k3s1", "v1.33.1-k3s1")
	for _, r := range replicas {
		waitFor(r.name+" to see the rollout", func() bool {
			code, _ := r.call(t, http.MethodGet, "/api/v1/channels/stable/rollout", "", "")
			return code == http.StatusOK
		})
	}

	got := map[string]bool{} // clusters that have been sent N
	// check sweeps both replicas and holds every answer to the rollout's
	// percent, read before and after (a sweep that straddles a step
	// boundary is done again).
	check := func(label string, wantStates ...string) openapi.Rollout {
		t.Helper()
		for attempt := 0; ; attempt++ {
			before := a.rollout(t)
			answers := []map[string]string{a.sweep(t, ids), b.sweep(t, ids)}
			after := b.rollout(t)
			if before.Percent != after.Percent || before.State != after.State {
				if attempt < 3 {
					continue
				}
				t.Fatalf("%s: the rollout kept moving during sweeps: %+v then %+v", label, before, after)
			}
			if !slices.Contains(wantStates, after.State) {
				t.Fatalf("%s: state %s, want %s", label, after.State, strings.Join(wantStates, " or "))
			}
			if after.From != rolloutP || after.To != rolloutN {
				t.Fatalf("%s: rollout from %s to %s", label, after.From, after.To)
			}
			onN := 0
			for k, ans := range answers {
				for _, id := range ids {
					want := rolloutP
					// A cluster that names itself and reports nothing
					// runs what it was last answered: a halt without
					// rollback leaves one sent N on N.
					if resolver.Bucket(id, "stable") < after.Percent || after.State == "halted" && got[id] {
						want = rolloutN
					}
					if ans[id] != want {
						t.Fatalf("%s: %s sent %s (bucket %d) %s at %d%%, want %s", label, replicas[k].name, id,
							resolver.Bucket(id, "stable"), ans[id], after.Percent, want)
					}
					if got[id] && ans[id] == rolloutP && after.State != "halted" {
						t.Fatalf("%s: %s went back from %s to %s", label, id, rolloutN, rolloutP)
					}
					if k == 0 && want == rolloutN {
						onN++
					}
				}
				wantAnon := rolloutP
				if after.Percent == 100 {
					wantAnon = rolloutN
				}
				if ans[""] != wantAnon {
					t.Fatalf("%s: a request without a cluster ID got %s at %d%%, want %s", label, ans[""], after.Percent, wantAnon)
				}
			}
			for _, id := range ids {
				if answers[0][id] == rolloutN {
					got[id] = true
				}
			}
			t.Logf("%s: step %d, %d%%, %d of %d clusters on %s", label, after.Step, after.Percent, onN, len(ids), rolloutN)
			return after
		}
	}
	waitStep := func(step int) {
		waitFor(fmt.Sprintf("step %d", step), func() bool { return a.rollout(t).Step >= step })
	}
	control := func(r rolloutReplica, action string) {
		t.Helper()
		code, body := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/"+action, token, `{"reason":"e2e `+action+`"}`)
		if code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", r.name, action, code, body)
		}
		// The other replica hears it through Postgres.
		for _, o := range replicas {
			waitFor(o.name+" to apply "+action, func() bool {
				code, b := o.call(t, http.MethodGet, "/api/v1/channels/stable/history", "", "")
				return code == http.StatusOK && strings.Contains(string(b), `"rollout-`+action+`"`) && o.rollout(t).State == a.rollout(t).State
			})
		}
	}

	if ro := check("step 1", "running"); ro.Percent != 10 {
		t.Fatalf("first step at %d%%, want 10", ro.Percent)
	}
	waitStep(2)
	check("step 2 by time", "running")

	control(a, "pause")
	time.Sleep(1200 * time.Millisecond) // longer than a step: a pause holds it
	if ro := check("paused", "paused"); ro.Step != 2 || ro.NextStepAt != nil {
		t.Fatalf("paused: step %d next %v, want step 2 and no next step", ro.Step, ro.NextStepAt)
	}
	control(b, "resume")
	control(b, "advance")
	if ro := check("advanced", "running"); ro.Step != 3 || ro.Percent != 70 {
		t.Fatalf("advanced: step %d at %d%%, want step 3 at 70%%", ro.Step, ro.Percent)
	}

	// Alertmanager fires: the rollout halts and every cluster gets P. The
	// group holds 3,000 other alerts too (nodes down by the thousand: the
	// moment the brake must work), about 1 MB, far over the write API's
	// 64 KiB.
	var filler strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&filler, `{"status":"firing","labels":{"alertname":"NodeNotReady","node":"node-%04d"},"annotations":{"summary":"node-%04d is NotReady"},"startsAt":"2025-06-01T12:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"http://prometheus:9090/graph","fingerprint":"%016x"},`, i, i, i)
	}
	payload := `{"version":"4","groupKey":"{}:{alertname=\"CanaryUnhealthy\"}","truncatedAlerts":0,"status":"firing",
		"receiver":"tidemark","groupLabels":{"alertname":"CanaryUnhealthy"},"commonLabels":{},"commonAnnotations":{},
		"externalURL":"http://alertmanager:9093","alerts":[` + filler.String() + `
		{"status":"firing","labels":{"alertname":"CanaryUnhealthy","tidemark_channel":"stable"},
		 "annotations":{"summary":"canary nodes NotReady"},"startsAt":"2025-06-01T12:00:00Z","endsAt":"0001-01-01T00:00:00Z",
		 "generatorURL":"http://prometheus:9090/graph","fingerprint":"1a30ba71cca2921f"},
		{"status":"resolved","labels":{"alertname":"Other","tidemark_channel":"stable"},"annotations":{}}]}`
	if len(payload) < 500<<10 {
		t.Fatalf("the alert group is %d bytes; the test wants a large one", len(payload))
	}
	code, body := a.call(t, http.MethodPost, "/api/v1/alerts/alertmanager", token, payload)
	if code != http.StatusOK || !strings.Contains(string(body), `"halted":["stable"]`) {
		t.Fatalf("alertmanager: %d %.500s", code, body)
	}
	huge := `{"version":"4","alerts":[],"pad":"` + strings.Repeat("x", core.MaxAlertmanagerBody) + `"}`
	if code, body := a.call(t, http.MethodPost, "/api/v1/alerts/alertmanager", token, huge); code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "8388608") {
		t.Errorf("an alert group over 8 MiB: %d %.300s, want 413 naming 8388608", code, body)
	}
	waitFor("replica B to halt", func() bool { return b.rollout(t).State == "halted" })
	check("halted by an alert", "halted")
	// The same alert again (Alertmanager repeats) halts nothing more.
	if code, body := b.call(t, http.MethodPost, "/api/v1/alerts/alertmanager", token, payload); code != http.StatusOK || !strings.Contains(string(body), `"halted":[]`) {
		t.Fatalf("repeated alert: %d %.500s", code, body)
	}

	control(a, "resume")
	// Resuming gives step 3 back the time it had left when the alert came.
	// The sweeps before the alert take most of the 1 s step on a loaded
	// machine, so what is left can be a few milliseconds and the rollout
	// may be complete by this look; the answers must match either way.
	if ro := check("resumed", "running", "complete"); ro.State == "running" {
		if ro.NextStepAt != nil {
			t.Logf("resumed with %s of step 3 left", time.Until(*ro.NextStepAt).Round(time.Millisecond))
		}
		waitStep(4)
	}
	check("complete", "complete")

	// The fleet saw every cluster end on N (both replicas recorded them).
	waitFor("the fleet's counts", func() bool {
		ro := b.rollout(t)
		return ro.Clusters != nil && ro.Clusters.To == rolloutClusters && ro.Clusters.From == 0
	})
	// The history tells the whole story, steps and completion included.
	waitFor("the leader to record completion", func() bool {
		_, b := a.call(t, http.MethodGet, "/api/v1/channels/stable/history", "", "")
		return strings.Contains(string(b), `"rollout-complete"`)
	})
	_, hist := a.call(t, http.MethodGet, "/api/v1/channels/stable/history", "", "")
	for _, action := range []string{"rollout-start", "rollout-step", "rollout-pause", "rollout-resume", "rollout-advance", "rollout-halt", "rollout-complete"} {
		if !strings.Contains(string(hist), `"`+action+`"`) {
			t.Errorf("history has no %s: %s", action, hist)
		}
	}
	if !strings.Contains(string(hist), "CanaryUnhealthy: canary nodes NotReady") {
		t.Errorf("the halt's reason is not the alert's name and summary: %s", hist)
	}
}
