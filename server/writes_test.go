package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/openapi"
)

// TestPromoteRollbackUnpin follows a release engineer: pin a following
// channel back one patch (rollback) with the ETag they read, see every
// read reflect it at once, unpin, and read the history.
func TestPromoteRollbackUnpin(t *testing.T) {
	env := newPGEnv(t, Options{})
	ts := env.ts
	before, etag := channel(t, ts, "v1.33")
	if before.Pinned || str(before.Version) != "v1.33.6+k3s2" {
		t.Fatalf("v1.33 before: pinned %v version %s; want following at v1.33.6+k3s2", before.Pinned, str(before.Version))
	}

	res, body := do(t, env, ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote",
		`{"version":"v1.33.5-k3s1","reason":"regression in 1.33.6"}`, "If-Match", etag)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	var pinned openapi.Channel
	if err := json.Unmarshal(body, &pinned); err != nil {
		t.Fatal(err)
	}
	if !pinned.Pinned || str(pinned.Version) != "v1.33.5+k3s1" || str(pinned.Tag) != "v1.33.5-k3s1" ||
		str(pinned.Digest) != tagDigest("v1.33.5-k3s1") || pinned.UpdatedAt == nil {
		t.Errorf("pin answer %+v: want pinned to v1.33.5+k3s1 (tag v1.33.5-k3s1) with its digest and updated_at", pinned)
	}
	newTag := res.Header.Get("ETag")
	if newTag == "" || newTag == etag {
		t.Errorf("pin answer ETag %q, was %q: want a new one", newTag, etag)
	}
	// The next reads on this replica see the pin: no waiting for NOTIFY.
	if got, tag := channel(t, ts, "v1.33"); str(got.Version) != "v1.33.5+k3s1" || tag != newTag {
		t.Errorf("GET after pin: %s %s, want v1.33.5+k3s1 %s", str(got.Version), tag, newTag)
	}
	if tag, ok := sucResolve(t, ts.URL+"/v1-release/channels/v1.33"); !ok || tag != "v1.33.5-k3s1" {
		t.Errorf("channel URL after pin: %q %v, want v1.33.5-k3s1", tag, ok)
	}
	// The tag is re-pointed after the promotion: the channel keeps naming
	// the image that was promoted, the version shows the re-tag.
	if err := env.st.SetDigests(context.Background(), "k3s", map[string]string{"v1.33.5-k3s1": tagDigest("rebuilt")}); err != nil {
		t.Fatal(err)
	}
	if err := env.srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := channel(t, ts, "v1.33"); str(got.Digest) != tagDigest("v1.33.5-k3s1") {
		t.Errorf("pinned channel digest after a re-tag: %s, want the promoted %s", str(got.Digest), tagDigest("v1.33.5-k3s1"))
	}
	if _, body := get(t, ts, "/api/v1/sources/k3s/versions/v1.33.5-k3s1"); !strings.Contains(string(body), `"previous_digest":"`+tagDigest("v1.33.5-k3s1")) {
		t.Errorf("version after a re-tag: %s", body)
	}

	res, body = do(t, env, ts, http.MethodDelete, "/api/v1/channels/v1.33/pin?reason=fixed+in+k3s2", "root", "", "If-Match", newTag)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("unpin: %d %s", res.StatusCode, body)
	}
	if got, _ := channel(t, ts, "v1.33"); got.Pinned || str(got.Version) != "v1.33.6+k3s2" {
		t.Errorf("after unpin: pinned %v version %s; want following at v1.33.6+k3s2", got.Pinned, str(got.Version))
	}
	res, body = do(t, env, ts, http.MethodDelete, "/api/v1/channels/v1.33/pin", "root", "")
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("unpin of an unpinned channel: %d %s, want 404", res.StatusCode, body)
	}

	res, body = get(t, ts, "/api/v1/channels/v1.33/history")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("history: %d %s", res.StatusCode, body)
	}
	var events []openapi.AuditEvent
	if err := json.Unmarshal(body, &events); err != nil {
		t.Fatal(err)
	}
	type ev struct{ Actor, Action, From, To, Reason string }
	var got []ev
	for _, e := range events {
		got = append(got, ev{e.Actor, e.Action, str(e.From), str(e.To), e.Reason})
	}
	want := []ev{
		// from and to are what the channel served: a rollback from the
		// stream's v1.33.6+k3s2 to v1.33.5+k3s1, and back.
		{"root", "unpin", "v1.33.5+k3s1", "v1.33.6+k3s2", "fixed in k3s2"},
		{"ci-promote", "pin", "v1.33.6+k3s2", "v1.33.5+k3s1", "regression in 1.33.6"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history, newest first (-want +got):\n%s", diff)
	}
	if res, _ := get(t, ts, "/api/v1/channels/nope/history"); res.StatusCode != http.StatusNotFound {
		t.Errorf("history of an unknown channel: %d, want 404", res.StatusCode)
	}
}

// TestPinOverridesConfigLatest: a database pin beats `latest:` from the
// configuration, and unpinning returns to it.
func TestPinOverridesConfigLatest(t *testing.T) {
	env := newPGEnv(t, Options{})
	res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/stable/pin", "ci-promote", `{"version":"v1.21.1+k3s1"}`)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"version":"v1.21.1+k3s1"`) {
		t.Fatalf("pin stable: %d %s", res.StatusCode, body)
	}
	res, body = do(t, env, env.ts, http.MethodDelete, "/api/v1/channels/stable/pin", "ci-promote", `{"reason":"back to config"}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("unpin stable: %d %s", res.StatusCode, body)
	}
	if got, _ := channel(t, env.ts, "stable"); !got.Pinned || str(got.Version) != "v1.21.2+k3s1" {
		t.Errorf("stable after unpin: pinned %v %s, want the configured v1.21.2+k3s1", got.Pinned, str(got.Version))
	}
	// The configured version is not a pin the API can remove; say where it is.
	res, body = do(t, env, env.ts, http.MethodDelete, "/api/v1/channels/stable/pin", "ci-promote", "")
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "fixed to v1.21.2+k3s1 by its configuration") {
		t.Errorf("unpin of a config-fixed channel: %d %s, want 404 pointing at the configuration", res.StatusCode, body)
	}
}

// TestForceSkipsEligibilityOnly: force pins a version the channel's filters
// exclude, but never one that is not indexed or is blocked.
func TestForceSkipsEligibilityOnly(t *testing.T) {
	env := newPGEnv(t, Options{})
	res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.34.2+k3s2","force":true}`)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"version":"v1.34.2+k3s2"`) {
		t.Errorf("forced pin of an ineligible version: %d %s, want 200", res.StatusCode, body)
	}
}

// TestRefusedWritesChangeNothing: every refused write leaves the channel
// answer, its ETag and the audit log exactly as they were.
func TestRefusedWritesChangeNothing(t *testing.T) {
	env := newPGEnv(t, Options{})
	ctx := context.Background()
	if _, err := env.st.Block(ctx, "k3s", "v1.33.4+k3s1", "ops", "CVE-2026-0001"); err != nil {
		t.Fatal(err)
	}
	revoked, err := env.st.CreateToken(ctx, "old-ci", []string{ScopeAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.st.RevokeToken(ctx, "old-ci"); err != nil {
		t.Fatal(err)
	}
	// Make the channel's revision move so that its first ETag is stale.
	_, stale := channel(t, env.ts, "v1.33")
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.6+k3s1"}`); res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}

	pin := "/api/v1/channels/v1.33/pin"
	block := "/api/v1/sources/k3s/versions/v1.33.5+k3s1/block"
	huge := strings.Repeat("x", 70<<10)
	tests := []struct {
		name, method, path, token, body string
		hdr                             []string
		status                          int
		detail                          string
	}{
		{"no token is 401", "PUT", pin, "", `{"version":"v1.33.5+k3s1"}`, nil, 401, "no token"},
		{"basic auth is 401", "PUT", pin, "Basic dXNlcjpwYXNz", `{"version":"v1.33.5+k3s1"}`, nil, 401, "Bearer"},
		{"unknown token is 401", "PUT", pin, "Bearer tdm_not-a-real-token", `{"version":"v1.33.5+k3s1"}`, nil, 401, "unknown or revoked"},
		{"revoked token is 401", "PUT", pin, "Bearer " + revoked, `{"version":"v1.33.5+k3s1"}`, nil, 401, "unknown or revoked"},
		{"scan token pinning is 403", "PUT", pin, "scanner", `{"version":"v1.33.5+k3s1"}`, nil, 403, "needs promote"},
		{"scan token blocking is 403", "PUT", block, "scanner", `{"reason":"x"}`, nil, 403, "needs promote"},
		{"scan token unpinning is 403", "DELETE", pin, "scanner", "", nil, 403, "needs promote"},
		{"stale If-Match is 412", "PUT", pin, "ci-promote", `{"version":"v1.33.5+k3s1"}`, []string{"If-Match", stale}, 412, "changed"},
		{"stale If-Match on unpin is 412", "DELETE", pin, "ci-promote", "", []string{"If-Match", stale}, 412, "changed"},
		{"foreign If-Match is 412", "PUT", pin, "ci-promote", `{"version":"v1.33.5+k3s1"}`, []string{"If-Match", `W/"x"`}, 412, "not an ETag"},
		{"ineligible version is 422", "PUT", pin, "ci-promote", `{"version":"v1.34.2+k3s2"}`, nil, 422, "v1.34.2+k3s2"},
		{"pre-release excluded by the channel is 422, hinting force", "PUT", pin, "ci-promote", `{"version":"v1.34.3-rc1-k3s1"}`, nil, 422, `send "force": true`},
		{"blocked version is 422 even forced", "PUT", pin, "ci-promote", `{"version":"v1.33.4+k3s1","force":true}`, nil, 422, "CVE-2026-0001"},
		{"unknown version is 422", "PUT", pin, "ci-promote", `{"version":"v1.33.99+k3s1"}`, nil, 422, "not indexed"},
		{"unknown version is 422 even forced", "PUT", pin, "ci-promote", `{"version":"v1.33.99+k3s1","force":true}`, nil, 422, "not indexed"},
		{"unparsed tag is 422", "PUT", pin, "ci-promote", `{"version":"latest","force":true}`, nil, 422, "not indexed"},
		{"unknown channel is 404", "PUT", "/api/v1/channels/nope/pin", "ci-promote", `{"version":"v1.33.5+k3s1"}`, nil, 404, "nope"},
		{"missing version is 400", "PUT", pin, "ci-promote", `{"reason":"x"}`, nil, 400, "version is required"},
		{"misspelt field is 400", "PUT", pin, "ci-promote", `{"version":"v1.34.2+k3s2","forse":true}`, nil, 400, "forse"},
		{"broken JSON is 400", "PUT", pin, "ci-promote", `{"version":`, nil, 400, ""},
		{"no body is 400", "PUT", pin, "ci-promote", "", nil, 400, "body is required"},
		{"pin body over 64 KiB is 413", "PUT", pin, "ci-promote", `{"version":"v1.33.5+k3s1","reason":"` + huge + `"}`, nil, 413, "over the limit of 65536 bytes"},
		{"unpin body over 64 KiB is 413", "DELETE", pin, "ci-promote", `{"reason":"` + huge + `"}`, nil, 413, "over the limit of 65536 bytes"},
		{"block body over 64 KiB is 413", "PUT", block, "ci-promote", `{"reason":"` + huge + `"}`, nil, 413, "over the limit of 65536 bytes"},
		{"block of an unknown version is 404", "PUT", "/api/v1/sources/k3s/versions/v9.9.9/block", "ci-promote", `{"reason":"x"}`, nil, 404, "v9.9.9"},
		{"block in an unknown source is 404", "PUT", "/api/v1/sources/nope/versions/v1.33.5+k3s1/block", "ci-promote", `{"reason":"x"}`, nil, 404, "nope"},
		{"unblock of an unblocked version is 404", "DELETE", block, "ci-promote", "", nil, 404, "not blocked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chBefore, tagBefore := channel(t, env.ts, "v1.33")
			_, vBefore := get(t, env.ts, "/api/v1/sources/k3s/versions/v1.33.5+k3s1")
			nBefore := env.auditCount()

			res, body := do(t, env, env.ts, tt.method, tt.path, tt.token, tt.body, tt.hdr...)
			if res.StatusCode != tt.status {
				t.Fatalf("%d %s, want %d", res.StatusCode, body, tt.status)
			}
			var p openapi.Problem
			if err := json.Unmarshal(body, &p); err != nil || res.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("not a problem+json body (%v): %s", err, body)
			}
			if !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("detail %q does not say %q", p.Detail, tt.detail)
			}
			if tt.status == 401 && res.Header.Get("WWW-Authenticate") != `Bearer realm="tidemark"` {
				t.Errorf("401 without WWW-Authenticate: Bearer: %q", res.Header.Get("WWW-Authenticate"))
			}
			chAfter, tagAfter := channel(t, env.ts, "v1.33")
			if diff := cmp.Diff(chBefore, chAfter); diff != "" || tagAfter != tagBefore {
				t.Errorf("channel changed (ETag %s -> %s):\n%s", tagBefore, tagAfter, diff)
			}
			if _, vAfter := get(t, env.ts, "/api/v1/sources/k3s/versions/v1.33.5+k3s1"); string(vAfter) != string(vBefore) {
				t.Errorf("version changed: %s -> %s", vBefore, vAfter)
			}
			if n := env.auditCount(); n != nBefore {
				t.Errorf("audit events %d -> %d: a refused write left a trace", nBefore, n)
			}
		})
	}
	for _, secret := range []string{revoked, env.tokens["ci-promote"], env.tokens["scanner"]} {
		if strings.Contains(env.logs.String(), secret) {
			t.Errorf("a token appears in the server log")
		}
	}
}

// TestConcurrentPinsOneWins: N writers holding the same ETag race; the
// database lets exactly one through and the others get 412.
func TestConcurrentPinsOneWins(t *testing.T) {
	env := newPGEnv(t, Options{})
	_, etag := channel(t, env.ts, "v1.33")
	const n = 8
	versions := []string{"v1.33.0+k3s1", "v1.33.1+k3s1", "v1.33.2+k3s1", "v1.33.3+k3s1", "v1.33.4+k3s1", "v1.33.5+k3s1", "v1.33.6+k3s1", "v1.33.6+k3s2"}
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote",
				`{"version":"`+versions[i]+`"}`, "If-Match", etag)
			codes[i] = res.StatusCode
		}()
	}
	wg.Wait()
	won, winner := 0, ""
	for i, c := range codes {
		switch c {
		case 200:
			won++
			winner = versions[i]
		case 412:
		default:
			t.Errorf("writer %d: %d, want 200 or 412", i, c)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers won (%v), want exactly 1", won, codes)
	}
	if got, _ := channel(t, env.ts, "v1.33"); str(got.Version) != winner {
		t.Errorf("channel serves %s, want the winner %s", str(got.Version), winner)
	}
	if ev, _ := env.st.History(context.Background(), "v1.33"); len(ev) != 1 {
		t.Errorf("%d audit events, want 1", len(ev))
	}
}

// TestBlockAndUnblock blocks by tag and by canonical version (with "+" raw
// and escaped): channels and resolve answers stop offering it at once.
func TestBlockAndUnblock(t *testing.T) {
	env := newPGEnv(t, Options{})
	ctx := context.Background()
	path := "/api/v1/sources/k3s/versions/v1.33.6-k3s2/block"
	res, body := do(t, env, env.ts, http.MethodPut, path, "ci-promote", `{"reason":"bad image"}`)
	if res.StatusCode != 200 {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	var v openapi.Version
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if !v.Blocked || v.Version != "v1.33.6+k3s2" {
		t.Errorf("block answer %+v, want v1.33.6+k3s2 blocked", v)
	}
	if got, _ := channel(t, env.ts, "v1.33"); str(got.Version) != "v1.33.6+k3s1" {
		t.Errorf("v1.33 serves %s with v1.33.6+k3s2 blocked, want v1.33.6+k3s1", str(got.Version))
	}
	_, body = get(t, env.ts, "/api/v1/resolve?source=k3s&current=v1.33.0-k3s1")
	if strings.Contains(string(body), "v1.33.6+k3s2") {
		t.Errorf("resolve offers a blocked version: %s", body)
	}
	// PUT again is idempotent: the same state, no second audit event.
	for _, p := range []string{"/api/v1/sources/k3s/versions/v1.33.6+k3s2/block", "/api/v1/sources/k3s/versions/v1.33.6%2Bk3s2/block"} {
		if res, body := do(t, env, env.ts, http.MethodPut, p, "ci-promote", `{"reason":"again"}`); res.StatusCode != 200 {
			t.Errorf("PUT %s again: %d %s", p, res.StatusCode, body)
		}
	}
	events, err := env.st.SourceHistory(ctx, "k3s")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || events[0].Action != "block" || events[0].Actor != "ci-promote" || events[0].To != "v1.33.6+k3s2" ||
		events[0].Channel != "" || events[0].Source != "k3s" || events[0].Reason != "bad image" {
		t.Errorf("source history %+v, want one block event by ci-promote", events)
	}

	res, body = do(t, env, env.ts, http.MethodDelete, "/api/v1/sources/k3s/versions/v1.33.6%2Bk3s2/block?reason=rebuilt", "root", "")
	if res.StatusCode != 200 || !strings.Contains(string(body), `"blocked":false`) {
		t.Fatalf("unblock: %d %s", res.StatusCode, body)
	}
	if got, _ := channel(t, env.ts, "v1.33"); str(got.Version) != "v1.33.6+k3s2" {
		t.Errorf("v1.33 serves %s after unblock, want v1.33.6+k3s2", str(got.Version))
	}
	if events, _ = env.st.SourceHistory(ctx, "k3s"); len(events) != 2 || events[0].Action != "unblock" || events[0].Reason != "rebuilt" {
		t.Errorf("source history after unblock %+v", events)
	}
}

// TestPinnedVersionBlockedLater: a block beats an existing pin, and the
// channel answers 404 instead of falling back to its stream.
func TestPinnedVersionBlockedLater(t *testing.T) {
	env := newPGEnv(t, Options{})
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.5+k3s1"}`); res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.5+k3s1/block", "ci-promote", `{"reason":"x"}`); res.StatusCode != 200 {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	if _, ok := sucResolve(t, env.ts.URL+"/v1-release/channels/v1.33"); ok {
		t.Error("a channel pinned to a blocked version still resolves")
	}
	// The 404 says why, so an operator sees the pin to fix.
	res, body := get(t, env.ts, "/v1-release/channels/v1.33")
	if res.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "pinned to v1.33.5+k3s1, which is blocked") {
		t.Errorf("channel URL of a pin on a blocked version: %d %s; want 404 saying the pin is blocked", res.StatusCode, body)
	}
	// The block shows in the channel's history, newest first, after the pin.
	res, body = get(t, env.ts, "/api/v1/channels/v1.33/history")
	var events []openapi.AuditEvent
	if err := json.Unmarshal(body, &events); err != nil || res.StatusCode != 200 {
		t.Fatalf("history: %d %s %v", res.StatusCode, body, err)
	}
	if len(events) != 2 || events[0].Action != "block" || str(events[0].To) != "v1.33.5+k3s1" || events[1].Action != "pin" {
		t.Errorf("history %+v, want the block then the pin, newest first", events)
	}
}

// TestPinToThePinnedVersionChangesNothing: promoting the version a channel
// is already pinned to answers 200 with the same ETag and records nothing.
func TestPinToThePinnedVersionChangesNothing(t *testing.T) {
	env := newPGEnv(t, Options{})
	const pin = "/api/v1/channels/v1.33/pin"
	res, body := do(t, env, env.ts, http.MethodPut, pin, "ci-promote", `{"version":"v1.33.5-k3s1"}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	etag, events := res.Header.Get("ETag"), env.auditCount()
	res, body = do(t, env, env.ts, http.MethodPut, pin, "ci-promote", `{"version":"v1.33.5+k3s1","reason":"again"}`)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"pinned":true`) {
		t.Fatalf("pin again: %d %s, want 200 and the pinned channel", res.StatusCode, body)
	}
	if got := res.Header.Get("ETag"); got != etag {
		t.Errorf("ETag %s -> %s: nothing changed, it should not move", etag, got)
	}
	if n := env.auditCount(); n != events {
		t.Errorf("audit events %d -> %d: an unchanged pin must not be recorded", events, n)
	}
}
