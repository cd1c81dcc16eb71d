package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// getChannel is GET /api/v1/channels/stable with If-None-Match inm ("":
// none): the status, the ETag and the object (zero on a 304).
func (r rolloutReplica) getChannel(t *testing.T, inm string) (int, string, openapi.Channel) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.base+"/api/v1/channels/stable", nil)
	if inm != "" {
		req.Header.Set("If-None-Match", inm)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var ch openapi.Channel
	if res.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, &ch); err != nil {
			t.Fatalf("channel object %s: %v", b, err)
		}
	}
	return res.StatusCode, res.Header.Get("ETag"), ch
}

// waitChannel polls the channel object until ok accepts it (5s).
func (r rolloutReplica) waitChannel(t *testing.T, what string, ok func(openapi.Channel) bool) (string, openapi.Channel) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, etag, ch := r.getChannel(t, "")
		if ok(ch) {
			return etag, ch
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(ch)
			t.Fatalf("no %s within 5s; last %s", what, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clustersOf(ch openapi.Channel) *openapi.RolloutClusters {
	if ch.Rollout == nil {
		return nil
	}
	return ch.Rollout.Clusters
}

// The channel object's rollout is the object GET .../rollout answers,
// with the counts its replica last took off the request path; its ETag
// follows the counts (a 304 always means the same body) while If-Match
// still compares the revision only. A rollout that indexing started is no
// pin: updated_at stays null until one.
func TestChannelObjectCarriesTheRolloutsLastCounts(t *testing.T) {
	ch := catalog.Channel{Name: "stable", Source: "k3s", Stream: resolver.Released, Redirect: "https://example.com/",
		Rollout: &resolver.RolloutPolicy{Steps: []int{50, 100}, Interval: time.Hour}}
	r, scan, token := rolloutEnv(t, ch, "v1.33.0-k3s1")
	scan("v1.33.0-k3s1", "v1.33.1-k3s1")
	etag0, c := r.waitChannel(t, "counts of the new rollout", func(c openapi.Channel) bool { return clustersOf(c) != nil })
	if got := *clustersOf(c); got != (openapi.RolloutClusters{}) {
		t.Errorf("counts before any cluster asked = %+v, want zeros", got)
	}
	if c.UpdatedAt != nil {
		t.Errorf("updated_at = %v after a rollout started by indexing, want null (no pin or unpin)", c.UpdatedAt)
	}

	var want openapi.RolloutClusters
	for i := range 40 {
		switch r.ask(t, "stable", fmt.Sprintf("c-%d", i), "") {
		case "v1.33.1+k3s1":
			want.To++
		case "v1.33.0+k3s1":
			want.From++
		}
	}
	if want.To == 0 || want.From == 0 {
		t.Fatalf("40 clusters at 50%%: %+v; want some on each side", want)
	}
	// Wait for the whole count: a count taken while the last sightings
	// were still being flushed is partial (the test raced it under load).
	etag1, c := r.waitChannel(t, "the clusters counted", func(c openapi.Channel) bool {
		cc := clustersOf(c)
		return cc != nil && *cc == want
	})
	if got := *clustersOf(c); got != want {
		t.Errorf("channel object's counts = %+v, want %+v", got, want)
	}
	if ro := r.rollout(t); ro.Clusters == nil || *ro.Clusters != want {
		t.Errorf("GET .../rollout counts = %+v, want %+v", ro.Clusters, want)
	}
	if etag1 == etag0 {
		t.Errorf("ETag %s did not change with the counts", etag1)
	}
	if code, _, _ := r.getChannel(t, etag0); code != http.StatusOK {
		t.Errorf("If-None-Match with the ETag of the old counts: %d, want 200", code)
	}
	if code, _, _ := r.getChannel(t, etag1); code != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", code)
	}

	code, b := r.call(t, http.MethodGet, "/api/v1/channels", "", "")
	var list []openapi.Channel
	if err := json.Unmarshal(b, &list); code != http.StatusOK || err != nil || len(list) != 1 || clustersOf(list[0]) == nil || *clustersOf(list[0]) != want {
		t.Errorf("GET /api/v1/channels: %d %s; want the counts %+v", code, b, want)
	}
	code, b = r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/pause", token, `{"reason":"look"}`)
	var ro openapi.Rollout
	if err := json.Unmarshal(b, &ro); code != http.StatusOK || err != nil || ro.Clusters == nil || *ro.Clusters != want {
		t.Errorf("pause: %d %s; want the counts %+v", code, b, want)
	}

	// If-Match takes the counted ETag: it compares the revision only.
	_, etag, _ := r.getChannel(t, "")
	req, _ := http.NewRequest(http.MethodPut, r.base+"/api/v1/channels/stable/pin", strings.NewReader(`{"version":"v1.33.0+k3s1","reason":"back"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("If-Match", etag)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pin with If-Match %s: %d %s", etag, res.StatusCode, pb)
	}
	if _, _, c := r.getChannel(t, ""); c.UpdatedAt == nil {
		t.Error("updated_at null after a pin")
	}
}
