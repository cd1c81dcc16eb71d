package server

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// k3sDatabase is a fresh database with one semver source, k3s, and scan,
// which records a complete listing of the given tags for it.
func k3sDatabase(t *testing.T) (*store.Store, string, catalog.Source, func(...string)) {
	t.Helper()
	ctx := context.Background()
	url := storetest.URL(t)
	st := openStore(t, url)
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		t.Fatal(err)
	}
	scan := func(names ...string) {
		t.Helper()
		var ts []resolver.Tag
		for _, n := range names {
			ts = append(ts, src.Classify(n))
		}
		if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "k3s", Complete: true, Tags: ts}); err != nil {
			t.Fatal(err)
		}
	}
	return st, url, src, scan
}

// rolloutEnv is one leading replica over a database holding tags.
func rolloutEnv(t *testing.T, ch catalog.Channel, tags ...string) (rolloutReplica, func(...string), string) {
	t.Helper()
	ctx := context.Background()
	st, url, src, scan := k3sDatabase(t)
	scan(tags...)
	token, err := st.CreateToken(ctx, "release", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	r := startRolloutReplica(t, url, "replica", src, ch, true)
	deadline := time.Now().Add(5 * time.Second)
	for {
		states, err := st.LoadStates(ctx)
		if err == nil && states[ch.Name].Rollout != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no baseline within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return r, scan, token
}

// ask is one cluster's answer from channel, reporting reported ("" none).
func (r rolloutReplica) ask(t *testing.T, channel, id, reported string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.base+"/v1-release/channels/"+channel, nil)
	req.Header.Set("X-SUC-Cluster-ID", id)
	if reported != "" {
		req.Header.Set("X-SUC-Latest-Version", reported)
	}
	res, err := rolloutClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		t.Fatalf("%s reporting %q: %d", id, reported, res.StatusCode)
	}
	return strings.Replace(path.Base(res.Header.Get("Location")), "%2B", "+", 1)
}

// clusterIn finds a cluster ID whose bucket in channel satisfies ok.
func clusterIn(channel string, ok func(int) bool) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("c-%d", i)
		if ok(resolver.Bucket(id, channel)) {
			return id
		}
	}
}

// A stepwise channel with a rollout: the rollout picks where each cluster
// goes (by bucket), the stepwise rule its next step toward it.
func TestRolloutDecidesTheDestinationStepwiseTheStep(t *testing.T) {
	ch := catalog.Channel{Name: "latest", Source: "k3s", Stream: resolver.Released, Stepwise: true, Redirect: "https://example.com/",
		Rollout: &resolver.RolloutPolicy{Steps: []int{50, 100}, Interval: time.Hour}}
	base := []string{"v1.30.0-k3s1", "v1.31.7-k3s1", "v1.32.9-k3s1"}
	r, scan, _ := rolloutEnv(t, ch, base...)
	scan(append(base, "v1.33.6-k3s1")...)
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := r.call(t, http.MethodGet, "/api/v1/channels/latest/rollout", "", ""); code != http.StatusOK; code, _ = r.call(t, http.MethodGet, "/api/v1/channels/latest/rollout", "", "") {
		if time.Now().After(deadline) {
			t.Fatal("no rollout within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	early := clusterIn("latest", func(b int) bool { return b < 50 })
	late := clusterIn("latest", func(b int) bool { return b >= 50 })
	for _, tc := range []struct{ id, reported, want string }{
		{early, "v1.32.9-k3s1", "v1.33.6+k3s1"}, // in the ring: one step to N
		{late, "v1.32.9-k3s1", "v1.32.9+k3s1"},  // outside: already at P, stays
		{early, "v1.30.0-k3s1", "v1.31.7+k3s1"}, // far behind: one minor, either way
		{late, "v1.30.0-k3s1", "v1.31.7+k3s1"},
		{late, "v1.31.7-k3s1", "v1.32.9+k3s1"}, // climbs toward P, not N
	} {
		if got := r.ask(t, "latest", tc.id, tc.reported); got != tc.want {
			t.Errorf("%s (bucket %d) reporting %s: got %s, want %s", tc.id, resolver.Bucket(tc.id, "latest"), tc.reported, got, tc.want)
		}
	}
}

// A pin while a rollout runs starts a new rollout in which no cluster
// moves backward: the ring that had N keeps it until M reaches it.
func TestNewChangeDuringARolloutMovesNoClusterBack(t *testing.T) {
	ch := catalog.Channel{Name: "stable", Source: "k3s", Stream: resolver.Released, Redirect: "https://example.com/",
		Rollout: &resolver.RolloutPolicy{Steps: []int{10, 50, 100}, Interval: time.Hour}}
	r, _, token := rolloutEnv(t, ch, "v1.33.0-k3s1", "v1.33.1-k3s1", "v1.33.2-k3s1")
	// The baseline is the newest; pin back to v1.33.0 (a rollout of its
	// own), let it complete, then roll out v1.33.1 to 50%.
	pin := func(v string) {
		t.Helper()
		code, body := r.call(t, http.MethodPut, "/api/v1/channels/stable/pin", token, `{"version":"`+v+`","reason":"test"}`)
		if code != http.StatusOK {
			t.Fatalf("pin %s: %d %s", v, code, body)
		}
	}
	advance := func() {
		t.Helper()
		if code, body := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/advance", token, ""); code != http.StatusOK {
			t.Fatalf("advance: %d %s", code, body)
		}
	}
	pin("v1.33.0+k3s1")
	advance()
	advance() // complete: every cluster on v1.33.0
	pin("v1.33.1+k3s1")
	advance() // 50%
	inN := clusterIn("stable", func(b int) bool { return b >= 10 && b < 50 })
	inFirst := clusterIn("stable", func(b int) bool { return b < 10 })
	outside := clusterIn("stable", func(b int) bool { return b >= 50 })
	if got := r.ask(t, "stable", inN, ""); got != "v1.33.1+k3s1" {
		t.Fatalf("before the new change, %s got %s, want v1.33.1+k3s1", inN, got)
	}
	pin("v1.33.2+k3s1") // a new change at 50%: the rollout of v1.33.2 starts at 10%
	ro := r.rollout(t)
	if ro.From != "v1.33.0+k3s1" || ro.To != "v1.33.2+k3s1" || ro.Percent != 10 {
		t.Fatalf("new rollout = %+v", ro)
	}
	for _, tc := range []struct{ id, want string }{
		{inFirst, "v1.33.2+k3s1"}, // the new ring
		{inN, "v1.33.1+k3s1"},     // keeps N: no step back to P
		{outside, "v1.33.0+k3s1"}, // still P
	} {
		if got := r.ask(t, "stable", tc.id, ""); got != tc.want {
			t.Errorf("%s (bucket %d): got %s, want %s", tc.id, resolver.Bucket(tc.id, "stable"), got, tc.want)
		}
	}
	if code, body := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/resume", token, ""); code != http.StatusConflict {
		t.Errorf("resume of a running rollout: %d %s, want 409", code, body)
	}
	if code, body := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/rewind", token, ""); code != http.StatusBadRequest {
		t.Errorf("unknown action: %d %s, want 400", code, body)
	}
}
