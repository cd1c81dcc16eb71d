package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestAChannelURLDuringARolloutSaysWhy: while a rollout runs, the channel
// object's version is the rollout's target and a channel URL asked with
// no cluster ID answers its from; the JSON the channel URL gives carries
// the rollout object, so the two say why they differ.
func TestAChannelURLDuringARolloutSaysWhy(t *testing.T) {
	ch := catalog.Channel{Name: "latest", Source: "k3s", Stream: resolver.Released, Redirect: "https://example.com/",
		Rollout: &resolver.RolloutPolicy{Steps: []int{10, 100}, Interval: time.Hour}}
	r, scan, _ := rolloutEnv(t, ch, "v1.33.5-k3s1")
	scan("v1.33.5-k3s1", "v1.33.6-k3s1")
	deadline := time.Now().Add(5 * time.Second)
	for code, _ := r.call(t, http.MethodGet, "/api/v1/channels/latest/rollout", "", ""); code != http.StatusOK; code, _ = r.call(t, http.MethodGet, "/api/v1/channels/latest/rollout", "", "") {
		if time.Now().After(deadline) {
			t.Fatal("no rollout within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	get := func(p string, accept bool) openapi.Channel {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, r.base+p, nil)
		if accept {
			req.Header.Set("Accept", "application/json")
		}
		res, err := rolloutClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var c openapi.Channel
		if err := json.NewDecoder(res.Body).Decode(&c); err != nil {
			t.Fatalf("GET %s: %d: %v", p, res.StatusCode, err)
		}
		return c
	}
	api := get("/api/v1/channels/latest", false)
	url := get("/v1-release/channels/latest", true)
	if api.Version == nil || *api.Version != "v1.33.6+k3s1" {
		t.Errorf("the channel object's version: %v, want the rollout's target", api.Version)
	}
	if url.Version == nil || *url.Version != "v1.33.5+k3s1" {
		t.Errorf("the channel URL's version with no cluster ID: %v, want the rollout's from", url.Version)
	}
	for name, c := range map[string]openapi.Channel{"channel object": api, "channel URL": url} {
		if ro := c.Rollout; ro == nil || ro.From != "v1.33.5+k3s1" || ro.To != "v1.33.6+k3s1" || ro.Percent != 10 {
			t.Errorf("the %s's rollout: %+v, want from v1.33.5+k3s1 to v1.33.6+k3s1 at 10%%", name, ro)
		}
	}
}
