package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/api"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/webhooks"
)

// TestWebhooksCheckCredentialsBeforeReadingTheBody: an unauthenticated
// post whose body never arrives is answered 401 at once: the body was not
// read (issue 24 item 5: 500 such posts took RSS to 806 MB).
func TestWebhooksCheckCredentialsBeforeReadingTheBody(t *testing.T) {
	rec := &pushRecorder{}
	env := newPGEnv(t, Options{Push: rec.push, DockerHubSecret: secretFunc("hub-secret")})
	for _, path := range []string{"/api/v1/webhooks/distribution", "/api/v1/webhooks/dockerhub/wrong"} {
		t.Run(path, func(t *testing.T) {
			body, w := io.Pipe()
			t.Cleanup(func() { w.Close() })
			req, _ := http.NewRequest(http.MethodPost, env.ts.URL+path, body)
			req.ContentLength = 4 << 20
			req.Header.Set("Content-Type", "application/json")
			client := &http.Client{Timeout: 5 * time.Second}
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("no answer before the body: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized && res.StatusCode != http.StatusForbidden {
				t.Errorf("status %d, want 401/403 before the body", res.StatusCode)
			}
		})
	}
}

// TestBodyLimitsPerRoute: each route's limit holds at the limit and past
// it, with a 413 naming the limit (CONTRACT section 12).
func TestBodyLimitsPerRoute(t *testing.T) {
	rec := &pushRecorder{}
	env := newPGEnv(t, Options{Push: rec.push})
	padded := func(n int) string { // a distribution envelope of exactly n bytes
		head, tail := `{"events":[],"pad":"`, `"}`
		return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	}
	if res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/distribution", "scanner", padded(api.MaxWebhookBody)); res.StatusCode != http.StatusAccepted {
		t.Errorf("a webhook of exactly 1 MiB: %d %s, want 202", res.StatusCode, body)
	}
	res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/distribution", "scanner", padded(api.MaxWebhookBody+1))
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "1048576") {
		t.Errorf("a webhook one byte over 1 MiB: %d %s, want 413 naming 1048576", res.StatusCode, body)
	}
	head, tail := `{"version":"v1.33.5-k3s1","reason":"`, `"}`
	exact := head + strings.Repeat("r", core.MaxWriteBody-len(head)-len(tail)) + tail
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", exact); res.StatusCode != http.StatusOK {
		t.Errorf("a pin of exactly 64 KiB: %d %.200s, want 200", res.StatusCode, body)
	}
	big := `{"version":"v1.33.5-k3s1","reason":"` + strings.Repeat("r", core.MaxWriteBody) + `"}`
	res, body = do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", big)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "65536") {
		t.Errorf("a pin over 64 KiB: %d %s, want 413 naming 65536", res.StatusCode, body)
	}
}

// TestWebhookTagsFollowTheGrammar: a tag with CR/LF or "../", or a
// repository outside the OCI grammar, is 400 naming the field and never
// queued (issue 24 item 9).
func TestWebhookTagsFollowTheGrammar(t *testing.T) {
	rec := &pushRecorder{}
	env := newPGEnv(t, Options{Push: rec.push})
	event := func(repo, tag string) string {
		return fmt.Sprintf(`{"events":[{"action":"push","target":{"repository":%q,"tag":%q},"request":{"host":"127.0.0.1:5000"}}]}`, repo, tag)
	}
	for _, tc := range []struct{ name, repo, tag, field string }{
		{"CR LF in a tag", "rancher/k3s-upgrade", "v1\r\nX-Evil: 1", "tag"},
		{"a path in a tag", "rancher/k3s-upgrade", "../../v2/_catalog", "tag"},
		{"a tag of 129 characters", "rancher/k3s-upgrade", "a" + strings.Repeat("b", 128), "tag"},
		{"an uppercase repository", "Rancher/k3s-upgrade", "v1", "repository"},
		{"a repository with ..", "rancher/../etc", "v1", "repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/distribution", "scanner", event(tc.repo, tc.tag))
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.field) {
				t.Errorf("%d %s, want 400 naming %s", res.StatusCode, body, tc.field)
			}
		})
	}
	if res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/distribution", "scanner", event("rancher/k3s-upgrade", "a"+strings.Repeat("b", 127))); res.StatusCode != http.StatusAccepted {
		t.Errorf("a tag of 128 characters: %d %s, want 202", res.StatusCode, body)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.evs) != 1 {
		t.Errorf("%d events queued, want only the valid one", len(rec.evs))
	}
}

// TestGuessingTheDockerHubSecretIsLimitedAndNeverLogged: wrong secrets count
// as failed credentials (429 after ten), the right one still works, and
// the access log shows the secret segment as *** (issue 24 item 8).
func TestGuessingTheDockerHubSecretIsLimitedAndNeverLogged(t *testing.T) {
	rec := &pushRecorder{}
	env := newPGEnv(t, Options{Push: rec.push, DockerHubSecret: secretFunc("hub-secret"), AccessLog: AccessLogAll})
	hub := readPayload(t, "dockerhub.json")
	for i := range core.AuthFailLimit {
		if res, _ := do(t, env, env.ts, http.MethodPost, fmt.Sprintf("/api/v1/webhooks/dockerhub/guess-%d", i), "", hub); res.StatusCode != http.StatusForbidden {
			t.Fatalf("guess %d: %d, want 403", i, res.StatusCode)
		}
	}
	res, _ := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/dockerhub/guess-x", "", hub)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("guess past the limit: %d Retry-After %q, want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/dockerhub/hub-secret", "", hub); res.StatusCode != http.StatusAccepted {
		t.Errorf("the right secret from a locked address: %d %s, want 202", res.StatusCode, body)
	}
	logs := env.logs.String()
	if strings.Contains(logs, "hub-secret") || strings.Contains(logs, "guess-") {
		t.Errorf("the log shows a Docker Hub secret:\n%s", grepLines(logs, "dockerhub"))
	}
	if !strings.Contains(logs, "/api/v1/webhooks/dockerhub/***") {
		t.Errorf("the log lacks the masked path:\n%s", grepLines(logs, "dockerhub"))
	}
}

// TestAccessLogFieldsAreCut: a 6 KB path and a 60 KB header make one line
// under 4 KiB (issue 24 item 10).
func TestAccessLogFieldsAreCut(t *testing.T) {
	env := newPGEnv(t, Options{AccessLog: AccessLogAll})
	req, _ := http.NewRequest(http.MethodGet, env.ts.URL+"/v1-release/channels/"+strings.Repeat("p", 6000)+"?q="+strings.Repeat("q", 100), nil)
	req.Header.Set("User-Agent", strings.Repeat("u", 60000))
	req.Header.Set("X-SUC-Cluster-ID", strings.Repeat("c", 60000))
	req.Header.Set("X-SUC-Latest-Version", strings.Repeat("v", 60000))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var line string
	for _, l := range strings.Split(env.logs.String(), "\n") {
		if strings.Contains(l, "pppp") {
			line = l
		}
	}
	if line == "" {
		t.Fatal("no access log line for the request")
	}
	if len(line) > 4096 {
		t.Errorf("access log line of %d bytes, want at most 4096", len(line))
	}
	for _, field := range []string{"user_agent=", "suc_cluster_id=", "path="} {
		if !strings.Contains(line, field) {
			t.Errorf("line lacks %s: %.300s", field, line)
		}
	}
}

// TestGitHubOwnersWithCapitalsMatch: GitHub's own example event names
// ghcr.io/Codertocat/hello-world; GHCR paths are lowercase (issue 25 item 5).
func TestGitHubOwnersWithCapitalsMatch(t *testing.T) {
	body := `{"action":"published","package":{"name":"hello-world","namespace":"Codertocat","package_type":"CONTAINER",
		"owner":{"login":"Codertocat"},"package_version":{"package_url":"ghcr.io/Codertocat/hello-world:6.0.0",
		"container_metadata":{"tag":{"name":"6.0.0"}}}}}`
	evs, err := webhooks.Parse("github", []byte(body))
	if err != nil || len(evs) != 1 || evs[0].Host != "ghcr.io" || evs[0].Repository != "codertocat/hello-world" || evs[0].Tag != "6.0.0" {
		t.Errorf("events %+v (%v), want ghcr.io codertocat/hello-world 6.0.0", evs, err)
	}
}

// TestTokensLimitedToChannels: a promote token created with --channels
// may pin only those channels, makes no source-wide write, and its
// Alertmanager alerts naming other channels are ignored and counted (issue
// 24 item 12).
func TestTokensLimitedToChannels(t *testing.T) {
	env := newPGEnv(t, Options{})
	tok, err := env.st.CreateChannelToken(context.Background(), "am", []string{ScopePromote}, []string{"v1.3*"})
	if err != nil {
		t.Fatal(err)
	}
	env.tokens["am"] = tok
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "am", `{"version":"v1.33.5-k3s1"}`); res.StatusCode != http.StatusOK {
		t.Errorf("pin of a matching channel: %d %s, want 200", res.StatusCode, body)
	}
	res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/stable/pin", "am", `{"version":"v1.33.5-k3s1"}`)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), `channel \"stable\" is not one of them`) {
		t.Errorf("pin of another channel: %d %s, want 403 naming it", res.StatusCode, body)
	}
	res, body = do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.5-k3s1/block", "am", `{"reason":"x"}`)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "without --channels") {
		t.Errorf("a block: %d %s, want 403 saying source-wide writes need an unlimited token", res.StatusCode, body)
	}
	if res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/sources/k3s/scan", "am", ""); res.StatusCode != http.StatusForbidden {
		t.Errorf("a scan: %d %s, want 403", res.StatusCode, body)
	}
	// Its Alertmanager alerts naming other channels halt nothing and are
	// listed as ignored.
	_, ts, _ := env.serve(env.st, Options{Rollouts: RolloutOptions{Store: env.st}})
	alert := `{"version":"4","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"Down","tidemark_channel":"stable"}}]}`
	res, body = do(t, env, ts, http.MethodPost, "/api/v1/alerts/alertmanager", "am", alert)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"halted":[]`) || !strings.Contains(string(body), `limited to channels [v1.3*]`) {
		t.Errorf("an alert for another channel: %d %s, want 200 with it ignored as out of the token's channels", res.StatusCode, body)
	}
}

// TestTheConsoleShowsABlockAsAChannelsLastChange: a block of what a channel
// serves changes it; the channel page's "Last change" said "never" (issue
// 25 item 6).
func TestTheConsoleShowsABlockAsAChannelsLastChange(t *testing.T) {
	env := newPGEnv(t, Options{})
	page := func() string {
		res, body := do(t, env, env.ts, http.MethodGet, "/ui/channels/v1.33", "", "", "Accept", "text/html")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("channel page: %d", res.StatusCode)
		}
		return string(body)
	}
	lastChange := regexp.MustCompile(`<dt>Last change</dt><dd>([^<]*<time[^>]*>[^<]*</time>|never)`)
	if m := lastChange.FindStringSubmatch(page()); m == nil || m[1] != "never" {
		t.Fatalf("before any change: %v, want never", m)
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.6-k3s1/block", "ci-promote", `{"reason":"etcd"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	if m := lastChange.FindStringSubmatch(page()); m == nil || m[1] == "never" {
		t.Errorf("after a block: %v, want the block's time", m)
	}
}

// TestAChannelNeverSendsAClusterDown: a pin to an older version answers a
// cluster running a newer one with its own version (held: downgrade,
// counted); a pin made as a rollback sends it down (CONTRACT section 13).
func TestAChannelNeverSendsAClusterDown(t *testing.T) {
	env := newPGEnv(t, Options{})
	ask := func(accept string) (*http.Response, []byte) {
		t.Helper()
		hdr := []string{"X-SUC-Cluster-ID", "c-1", "X-SUC-Latest-Version", "v1.33.6-k3s1"}
		if accept != "" {
			hdr = append(hdr, "Accept", accept)
		}
		req, _ := http.NewRequest(http.MethodGet, env.ts.URL+"/v1-release/channels/v1.33", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.5-k3s1","reason":"older"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	res, _ := ask("")
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || !strings.HasSuffix(loc, "/v1.33.6+k3s1") {
		t.Errorf("a cluster on v1.33.6 after a pin to v1.33.5: %d %s, want 302 to its own v1.33.6+k3s1", res.StatusCode, loc)
	}
	if _, body := ask("application/json"); !strings.Contains(string(body), `"held":{"reason":"downgrade"}`) {
		t.Errorf("JSON answer %s, want held downgrade", body)
	}
	// A cluster on an older version still gets the pin.
	req, _ := http.NewRequest(http.MethodGet, env.ts.URL+"/v1-release/channels/v1.33", nil)
	req.Header.Set("X-SUC-Latest-Version", "v1.33.0-k3s1")
	if res, err := noRedirects.Do(req); err != nil || !strings.HasSuffix(res.Header.Get("Location"), "/v1.33.5+k3s1") {
		t.Errorf("a cluster on v1.33.0: %v %v, want the pin v1.33.5+k3s1", res.Header.Get("Location"), err)
	}
	_, metrics := get(t, env.ts, "/metrics")
	if !strings.Contains(string(metrics), `tidemark_answers_held_total{channel="v1.33",reason="downgrade"} 2`) {
		t.Errorf("metrics lack 2 held answers:\n%s", grepLines(string(metrics), "answers_held"))
	}

	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.5-k3s1","reason":"bad release","rollback":true}`); res.StatusCode != http.StatusOK {
		t.Fatalf("rollback pin: %d %s", res.StatusCode, body)
	}
	if res, _ := ask(""); !strings.HasSuffix(res.Header.Get("Location"), "/v1.33.5+k3s1") {
		t.Errorf("after a rollback pin: %s, want v1.33.5+k3s1", res.Header.Get("Location"))
	}
	_, hist := get(t, env.ts, "/api/v1/channels/v1.33/history")
	if !strings.Contains(string(hist), `"action":"rollback"`) {
		t.Errorf("history %s lacks the rollback", hist)
	}
}

// TestAHaltKeepsClustersOnTheNewVersionUnlessARollback: a halted rollout
// sends its previous version only to clusters not already on its new one;
// a halt with "rollback": true sends them back too (CONTRACT section 13).
func TestAHaltKeepsClustersOnTheNewVersionUnlessARollback(t *testing.T) {
	ch := catalog.Channel{Name: "stable", Source: "k3s", Stream: resolver.Released, Redirect: "https://example.com/",
		Rollout: &resolver.RolloutPolicy{Steps: []int{50, 100}, Interval: time.Hour}}
	r, scan, token := rolloutEnv(t, ch, "v1.33.0-k3s1")
	scan("v1.33.0-k3s1", "v1.33.1-k3s1")
	in := clusterIn("stable", func(b int) bool { return b < 50 })
	deadline := time.Now().Add(5 * time.Second)
	for r.ask(t, "stable", in, "v1.33.0-k3s1") != "v1.33.1+k3s1" {
		if time.Now().After(deadline) {
			t.Fatal("the ring's cluster never got v1.33.1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, b := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/halt", token, `{"reason":"canary down"}`); code != http.StatusOK {
		t.Fatalf("halt: %d %s", code, b)
	}
	if got := r.ask(t, "stable", in, "v1.33.1-k3s1"); got != "v1.33.1+k3s1" {
		t.Errorf("a cluster on v1.33.1 after a plain halt: %s, want it kept on v1.33.1+k3s1", got)
	}
	if got := r.ask(t, "stable", in, "v1.33.0-k3s1"); got != "v1.33.0+k3s1" {
		t.Errorf("a cluster still on v1.33.0 after a halt: %s, want v1.33.0+k3s1", got)
	}
	if code, b := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/pause", token, `{"reason":"x","rollback":true}`); code != http.StatusBadRequest || !strings.Contains(string(b), "rollback") {
		t.Errorf("rollback on a pause: %d %s, want 400 naming rollback", code, b)
	}
	if code, b := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/resume", token, `{"reason":"retry"}`); code != http.StatusOK {
		t.Fatalf("resume: %d %s", code, b)
	}
	if code, b := r.call(t, http.MethodPost, "/api/v1/channels/stable/rollout/halt", token, `{"reason":"bad release","rollback":true}`); code != http.StatusOK {
		t.Fatalf("rollback halt: %d %s", code, b)
	}
	if got := r.ask(t, "stable", in, "v1.33.1-k3s1"); got != "v1.33.0+k3s1" {
		t.Errorf("a cluster on v1.33.1 after a rollback halt: %s, want v1.33.0+k3s1", got)
	}
}

// TestChannelReleasesListOnlyWhatTheChannelMayServe: Renovate's custom
// datasource answer names registry tags with when they were first
// indexed, and never a blocked version (CONTRACT section 14).
func TestChannelReleasesListOnlyWhatTheChannelMayServe(t *testing.T) {
	env := newPGEnv(t, Options{})
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.5-k3s1/block", "ci-promote", `{"reason":"etcd"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	res, body := get(t, env.ts, "/api/v1/channels/v1.33/releases")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("releases: %d %s", res.StatusCode, body)
	}
	var got openapi.ChannelReleases
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Releases) == 0 || got.SourceURL != "https://docker.io/rancher/k3s-upgrade" {
		t.Fatalf("releases %s", body)
	}
	for _, r := range got.Releases {
		if r.Version == "v1.33.5-k3s1" {
			t.Error("a blocked version is listed")
		}
		if !strings.HasPrefix(r.Version, "v1.33.") || strings.Contains(r.Version, "+") || r.ReleaseTimestamp == nil {
			t.Errorf("release %+v: want a v1.33 registry tag with its first-indexed time", r)
		}
	}
	if res, _ := get(t, env.ts, "/api/v1/channels/nope/releases"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown channel: %d, want 404", res.StatusCode)
	}
}

// TestAClusterOnABlockedVersion: a cluster reporting a blocked version is
// steered only to a servable version above it that its channel serves
// (up to the newest of its served set: never above the channel); with
// none it stays where it is (it is never sent down), and its JSON says it
// is held on a blocked version.
func TestAClusterOnABlockedVersion(t *testing.T) {
	env := newPGEnv(t, Options{})
	ask := func(reported, accept string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, env.ts.URL+"/v1-release/channels/v1.33", nil)
		req.Header.Set("X-SUC-Cluster-ID", "c-blocked")
		req.Header.Set("X-SUC-Latest-Version", reported)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	for _, w := range []struct{ method, path, body string }{
		{http.MethodPut, "/api/v1/channels/v1.33/pin", `{"version":"v1.33.5-k3s1","reason":"older"}`},
		{http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.6-k3s1/block", `{"reason":"CVE"}`},
	} {
		if res, body := do(t, env, env.ts, w.method, w.path, "ci-promote", w.body); res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", w.path, res.StatusCode, body)
		}
	}
	if res, _ := ask("v1.33.6-k3s1", ""); !strings.HasSuffix(res.Header.Get("Location"), "/v1.33.6+k3s1") {
		t.Errorf("a cluster on blocked v1.33.6+k3s1, its channel pinned at v1.33.5: %d %s, want its own (v1.33.6+k3s2 is above the channel)", res.StatusCode, res.Header.Get("Location"))
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.6-k3s2","reason":"newer"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	if res, _ := ask("v1.33.6-k3s1", ""); !strings.HasSuffix(res.Header.Get("Location"), "/v1.33.6+k3s2") {
		t.Errorf("a cluster on blocked v1.33.6+k3s1, its channel at v1.33.6+k3s2: %d %s, want v1.33.6+k3s2", res.StatusCode, res.Header.Get("Location"))
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.5-k3s1","reason":"older"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.6-k3s2/block", "ci-promote", `{"reason":"CVE"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	res, _ := ask("v1.33.6-k3s2", "")
	if !strings.HasSuffix(res.Header.Get("Location"), "/v1.33.6+k3s2") {
		t.Errorf("a cluster on blocked v1.33.6+k3s2 with nothing above: %s, want its own (never sent down)", res.Header.Get("Location"))
	}
	if _, body := ask("v1.33.6-k3s2", "application/json"); !strings.Contains(string(body), `"held":{"reason":"downgrade","blocked":true}`) {
		t.Errorf("JSON answer %s, want held downgrade, blocked", body)
	}
}
