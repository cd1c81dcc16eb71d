package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

// governedChannels are the k3s channels with governance: v1.33 needs two
// approvals; k3s-released has a window that is closed now.
func governedChannels(now time.Time) []catalog.Channel {
	chs := k3sChannels()
	for i := range chs {
		switch chs[i].Name {
		case "v1.33":
			chs[i].Approvals = 2
		case "k3s-released":
			// Open every day from two hours from now for an hour: closed now.
			days, _ := resolver.ParseDays([]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"})
			start := now.UTC().Add(2 * time.Hour)
			m := start.Hour()*60 + start.Minute()
			chs[i].Windows = []resolver.Window{{Days: days, Start: m, End: (m + 60) % (24 * 60), Location: time.UTC}}
		}
	}
	return chs
}

// governed is a replica with governance on env's database.
func (env *pgEnv) governed(st *store.Store) (*Server, *httptest.Server) {
	srv, ts, _ := env.serve(st, Options{Data: st, Sources: []catalog.Source{env.src}, Channels: governedChannels(time.Now()), Governance: st})
	return srv, ts
}

func (s *Server) governorOpts() governor.Options {
	return governor.Options{Store: s.Opts.Governance, Applied: s.Notify, Log: s.Log, Snapshot: func() *snapshot.Snapshot {
		if v := s.Cur.Load(); v != nil {
			return v.Snap
		}
		return nil
	}}
}

func decodeChange(t *testing.T, body []byte) openapi.Change {
	t.Helper()
	var c openapi.Change
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("change: %v in %s", err, body)
	}
	return c
}

// waitServes polls ts until channel serves version (or the deadline),
// reloading srv each time: these replicas are not Run, so nothing else
// reloads them.
func waitServes(t *testing.T, srv *Server, ts *httptest.Server, name, version string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ch, _ := channel(t, ts, name); str(ch.Version) == version {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ch, _ := channel(t, ts, name)
	t.Fatalf("channel %s serves %s after %s, want %s", name, str(ch.Version), within, version)
	return 0
}

// TestScheduledChangeAppliedOnceAcrossReplicas: a change scheduled on one
// replica is applied at its time by the governor (within 5 s), exactly
// once while two replicas' governors race for it, and served by both; a
// change whose version was blocked meanwhile fails, recorded and
// notified.
func TestScheduledChangeAppliedOnceAcrossReplicas(t *testing.T) {
	env := newPGEnv(t, Options{})
	srvA, tsA := env.governed(env.st)
	stB := openStore(t, env.url)
	srvB, tsB := env.governed(stB)

	// Bad input: each 400 names the field, nothing recorded.
	before := env.auditCount()
	for _, tc := range []struct{ body, param string }{
		{`{"action":"pin","version":"v1.32.5+k3s1","at":"2020-01-01T00:00:00Z"}`, "at"},
		{`{"action":"pin","version":"v1.32.5+k3s1","at":"tomorrow"}`, "at"},
		{`{"action":"pin","version":"v1.32.5+k3s1"}`, "at"},
		{`{"action":"promote","version":"v1.32.5+k3s1","at":"2099-01-01T00:00:00Z"}`, "action"},
		{`{"action":"pin","version":"v9.9.9+k3s1","at":"2099-01-01T00:00:00Z"}`, "version"},
	} {
		res, body := send(t, http.MethodPost, tsA.URL+"/api/v1/channels/v1.32/changes", env.tokens["ci-promote"], tc.body)
		var p openapi.Problem
		_ = json.Unmarshal(body, &p)
		if res.StatusCode/100 != 4 || p.Param != tc.param {
			t.Errorf("%s: %d %s, want 4xx naming %s", tc.body, res.StatusCode, body, tc.param)
		}
	}
	if env.auditCount() != before {
		t.Errorf("refused changes were recorded")
	}

	at := time.Now().Add(1500 * time.Millisecond).UTC()
	res, body := send(t, http.MethodPost, tsA.URL+"/api/v1/channels/v1.32/changes", env.tokens["ci-promote"],
		fmt.Sprintf(`{"action":"pin","version":"v1.32.5-k3s1","reason":"maintenance","at":%q}`, at.Format(time.RFC3339Nano)))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("schedule: %d %s", res.StatusCode, body)
	}
	ch := decodeChange(t, body)
	if ch.State != "scheduled" || str(ch.Version) != "v1.32.5+k3s1" || ch.RequestedBy != "ci-promote" {
		t.Errorf("scheduled change %+v", ch)
	}
	// Both replicas' governors, every 100 ms, race for it.
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []*Server{srvA, srvB} {
		o := s.governorOpts()
		o.Every = 100 * time.Millisecond
		wg.Go(func() { governor.Run(ctx, o) })
	}
	waitServes(t, srvA, tsA, "v1.32", "v1.32.5+k3s1", 10*time.Second)
	late := time.Since(at) // an upper bound: seen by a poll every 50 ms
	waitServes(t, srvB, tsB, "v1.32", "v1.32.5+k3s1", 5*time.Second)
	stop()
	wg.Wait()
	t.Logf("applied %s after its time", late.Round(time.Millisecond))
	if late > 5*time.Second {
		t.Errorf("applied %s after its time, want within 5s", late)
	}
	events, err := env.st.History(context.Background(), "v1.32")
	if err != nil {
		t.Fatal(err)
	}
	pins := 0
	for _, e := range events {
		if e.Action == "pin" {
			pins++
			if e.Actor != "ci-promote" || e.To != "v1.32.5+k3s1" || e.Reason != "maintenance" {
				t.Errorf("pin audited as %+v, want by the requester", e)
			}
		}
	}
	if pins != 1 {
		t.Errorf("%d pin events, want exactly 1:\n%+v", pins, events)
	}
	_, body = send(t, http.MethodGet, tsA.URL+"/api/v1/changes?state=done", env.tokens["ci-promote"], "")
	var list openapi.ChangeList
	if err := json.Unmarshal(body, &list); err != nil || len(list.Changes) != 1 || list.Changes[0].ID != ch.ID {
		t.Errorf("done changes: %s (%v)", body, err)
	}

	// Blocked before its time: the change fails, recorded and notified.
	at = time.Now().Add(time.Second).UTC()
	_, body = send(t, http.MethodPost, tsA.URL+"/api/v1/channels/v1.32/changes", env.tokens["ci-promote"],
		fmt.Sprintf(`{"action":"pin","version":"v1.32.4-k3s1","at":%q}`, at.Format(time.RFC3339Nano)))
	doomed := decodeChange(t, body)
	if res, body := send(t, http.MethodPut, tsA.URL+"/api/v1/sources/k3s/versions/v1.32.4-k3s1/block", env.tokens["ci-promote"], `{"reason":"CVE"}`); res.StatusCode != 200 {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	time.Sleep(time.Until(at) + 50*time.Millisecond)
	governor.Tick(context.Background(), srvB.governorOpts())
	_, body = send(t, http.MethodGet, tsA.URL+"/api/v1/changes?state=failed", env.tokens["ci-promote"], "")
	if err := json.Unmarshal(body, &list); err != nil || len(list.Changes) != 1 || list.Changes[0].ID != doomed.ID || !strings.Contains(list.Changes[0].Outcome, "blocked") {
		t.Errorf("failed changes: %s", body)
	}
	evs, _, err := env.st.RecentEvents(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(e resolver.Event) bool { return e.Type == resolver.EventChangeFailed }) {
		t.Errorf("no change.failed event in the outbox")
	}
	if res, _ := send(t, http.MethodDelete, tsA.URL+fmt.Sprintf("/api/v1/changes/%d", ch.ID), env.tokens["ci-promote"], ""); res.StatusCode != http.StatusConflict {
		t.Errorf("cancel of a done change: %d, want 409", res.StatusCode)
	}
}

// TestApprovals: a pin on a channel with approvals: 2 is a pending change;
// the requester may not approve it, nobody twice; the second distinct
// approval applies it, audited with the requester as actor and the
// approvers named. A rejection ends another.
func TestApprovals(t *testing.T) {
	env := newPGEnv(t, Options{})
	_, ts := env.governed(env.st)
	lead, err := env.st.CreateToken(context.Background(), "release-lead", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	res, body := send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], `{"version":"v1.33.5+k3s1","reason":"regression"}`)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("pin needing approvals: %d %s", res.StatusCode, body)
	}
	ch := decodeChange(t, body)
	if ch.State != "pending" || ch.ApprovalsNeeded != 2 || ch.ExpiresAt == nil {
		t.Fatalf("pending change %+v", ch)
	}
	if got, _ := channel(t, ts, "v1.33"); str(got.Version) != "v1.33.6+k3s2" {
		t.Errorf("a pending pin moved the channel to %s", str(got.Version))
	}
	approve := func(tok string) (int, openapi.Change) {
		res, body := send(t, http.MethodPost, ts.URL+fmt.Sprintf("/api/v1/changes/%d/approve", ch.ID), tok, `{"reason":"ok"}`)
		var c openapi.Change
		_ = json.Unmarshal(body, &c)
		return res.StatusCode, c
	}
	// The requester is told that someone else must decide.
	if res, body := send(t, http.MethodPost, ts.URL+fmt.Sprintf("/api/v1/changes/%d/approve", ch.ID), env.tokens["ci-promote"], `{"reason":"ok"}`); res.StatusCode != http.StatusConflict ||
		!strings.Contains(string(body), "cannot approve or reject it: 2 others must approve it") {
		t.Errorf("approval by the requester: %d %s, want 409 saying others must approve", res.StatusCode, body)
	}
	if code, c := approve(env.tokens["root"]); code != 200 || c.State != "pending" || len(c.Approvals) != 1 {
		t.Errorf("first approval: %d %+v", code, c)
	}
	if code, _ := approve(env.tokens["root"]); code != http.StatusConflict {
		t.Errorf("second approval by one identity: %d, want 409", code)
	}
	code, c := approve(lead)
	if code != 200 || c.State != "done" {
		t.Fatalf("last approval: %d %+v", code, c)
	}
	if got, _ := channel(t, ts, "v1.33"); str(got.Version) != "v1.33.5+k3s1" {
		t.Errorf("approved pin: channel serves %s", str(got.Version))
	}
	events, _ := env.st.History(context.Background(), "v1.33")
	i := slices.IndexFunc(events, func(e resolver.AuditEvent) bool { return e.Action == "pin" })
	if i < 0 || events[i].Actor != "ci-promote" || !strings.Contains(events[i].Reason, "approved by root, release-lead") {
		t.Errorf("audit: %+v", events)
	}
	// History calls the request what it was: one waiting for approvals.
	if !slices.ContainsFunc(events, func(e resolver.AuditEvent) bool {
		return e.Action == "change-request" && strings.Contains(e.Reason, "needs 2 approvals")
	}) || slices.ContainsFunc(events, func(e resolver.AuditEvent) bool { return e.Action == "change-schedule" }) {
		t.Errorf("history of a change that waited for approvals: %+v, want change-request, no change-schedule", events)
	}
	// Rejected: nothing changes, and a decided change cannot be cancelled.
	_, body = send(t, http.MethodDelete, ts.URL+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], "")
	un := decodeChange(t, body)
	if res, body := send(t, http.MethodPost, ts.URL+fmt.Sprintf("/api/v1/changes/%d/reject", un.ID), lead, ""); res.StatusCode != 200 || decodeChange(t, body).State != "rejected" {
		t.Errorf("reject: %d %s", res.StatusCode, body)
	}
	if res, _ := send(t, http.MethodDelete, ts.URL+fmt.Sprintf("/api/v1/changes/%d", un.ID), env.tokens["ci-promote"], ""); res.StatusCode != http.StatusConflict {
		t.Errorf("cancel of a rejected change: %d, want 409", res.StatusCode)
	}
	if got, _ := channel(t, ts, "v1.33"); !got.Pinned {
		t.Errorf("a rejected unpin unpinned the channel")
	}
}

// TestFreezesAndWindowsHold: a freeze (admin only) holds its channels and
// refuses pins with a 409 naming it, an admin's override takes effect at
// once; a channel outside its window keeps its answer and says until
// when; cancelling the freeze lifts its hold.
func TestFreezesAndWindowsHold(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, ts := env.governed(env.st)
	tick := func() {
		governor.Tick(context.Background(), srv.governorOpts())
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	from, until := time.Now().Add(-time.Minute).UTC(), time.Now().Add(time.Hour).UTC()
	freeze := fmt.Sprintf(`{"channels":["v1.3*"],"from":%q,"until":%q,"reason":"year-end freeze"}`, from.Format(time.RFC3339), until.Format(time.RFC3339))
	if res, _ := send(t, http.MethodPost, ts.URL+"/api/v1/freezes", env.tokens["ci-promote"], freeze); res.StatusCode != http.StatusForbidden {
		t.Errorf("freeze by promote: %d, want 403", res.StatusCode)
	}
	for _, tc := range []struct{ body, param string }{
		{`{"channels":["v1.*"],"from":"2026-01-02T00:00:00Z","until":"2026-01-01T00:00:00Z","reason":"x"}`, "until"},
		{`{"channels":[],"from":"2026-01-01T00:00:00Z","until":"2099-01-01T00:00:00Z","reason":"x"}`, "channels"},
		{`{"channels":["v1.*"],"from":"2026-01-01T00:00:00Z","until":"2099-01-01T00:00:00Z","reason":""}`, "reason"},
		{`{"channels":["["],"from":"2026-01-01T00:00:00Z","until":"2099-01-01T00:00:00Z","reason":"x"}`, "channels[0]"},
	} {
		res, body := send(t, http.MethodPost, ts.URL+"/api/v1/freezes", env.tokens["root"], tc.body)
		var p openapi.Problem
		_ = json.Unmarshal(body, &p)
		if res.StatusCode != 400 || p.Param != tc.param {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.body, res.StatusCode, body, tc.param)
		}
	}
	res, body := send(t, http.MethodPost, ts.URL+"/api/v1/freezes", env.tokens["root"], freeze)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("freeze: %d %s", res.StatusCode, body)
	}
	var f openapi.Freeze
	_ = json.Unmarshal(body, &f)
	tick()
	ch, _ := channel(t, ts, "v1.32")
	if ch.Held == nil || ch.Held.Reason != "year-end freeze" || ch.Held.Until == nil || !ch.Held.Until.Equal(until.Truncate(time.Second)) {
		t.Errorf("frozen channel object: held %+v", ch.Held)
	}
	// A second replica holding the same channel a moment later (its
	// snapshot may differ) keeps the version the first recorded.
	if err := env.st.BeginHold(context.Background(), "v1.32", resolver.Hold{Version: "v1.32.1+k3s1", Reason: "year-end freeze", Until: until}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again, _ := channel(t, ts, "v1.32"); str(again.Version) != str(ch.Version) {
		t.Errorf("a second BeginHold moved the held version to %s (was %s)", str(again.Version), str(ch.Version))
	}
	res, body = send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.32/pin", env.tokens["ci-promote"], `{"version":"v1.32.5+k3s1"}`)
	if res.StatusCode != http.StatusConflict || !strings.Contains(string(body), "year-end freeze") || !strings.Contains(string(body), until.Format(time.RFC3339)) {
		t.Errorf("pin of a frozen channel: %d %s", res.StatusCode, body)
	}
	if res, _ := send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.32/pin", env.tokens["ci-promote"], `{"version":"v1.32.5+k3s1","override_freeze":true}`); res.StatusCode != http.StatusForbidden {
		t.Errorf("override by promote: %d, want 403", res.StatusCode)
	}
	if res, body := send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.32/pin", env.tokens["root"], `{"version":"v1.32.5+k3s1","override_freeze":true}`); res.StatusCode != 200 {
		t.Errorf("override by admin: %d %s", res.StatusCode, body)
	}
	tick()
	if ch, _ := channel(t, ts, "v1.32"); str(ch.Version) != "v1.32.5+k3s1" || ch.Held == nil {
		t.Errorf("after an override: serves %s held %+v, want v1.32.5+k3s1 at once, still frozen", str(ch.Version), ch.Held)
	}

	// The window: k3s-released is closed now; a pin is taken but waits.
	rel, _ := channel(t, ts, "k3s-released")
	if rel.Held == nil || rel.Held.Reason != "window" || rel.Held.Until == nil || rel.Held.Until.Before(time.Now().Add(time.Hour)) {
		t.Errorf("closed window: held %+v", rel.Held)
	}
	if res, body := send(t, http.MethodPut, ts.URL+"/api/v1/channels/k3s-released/pin", env.tokens["ci-promote"], `{"version":"v1.33.5+k3s1"}`); res.StatusCode != 200 {
		t.Errorf("pin outside a window: %d %s", res.StatusCode, body)
	}
	tick()
	if after, _ := channel(t, ts, "k3s-released"); str(after.Version) != str(rel.Version) || !after.Pinned {
		t.Errorf("outside its window the channel moved to %s (was %s)", str(after.Version), str(rel.Version))
	}

	if res, body := send(t, http.MethodDelete, ts.URL+fmt.Sprintf("/api/v1/freezes/%d", f.ID), env.tokens["root"], ""); res.StatusCode != 200 {
		t.Fatalf("cancel freeze: %d %s", res.StatusCode, body)
	}
	tick()
	if ch, _ := channel(t, ts, "v1.32"); ch.Held != nil {
		t.Errorf("after the freeze: still held %+v", ch.Held)
	}
	if res, _ := send(t, http.MethodDelete, ts.URL+fmt.Sprintf("/api/v1/freezes/%d", f.ID), env.tokens["root"], ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("cancel of a cancelled freeze: %d, want 404", res.StatusCode)
	}
}

// TestHeldRolloutWaits: a freeze on a channel that is rolling out pauses
// its rollout (signed by the governor) so its steps wait, and the end of
// the freeze resumes it; a rollout a person paused is left paused.
func TestHeldRolloutWaits(t *testing.T) {
	env := newPGEnv(t, Options{})
	serveRollouts(t, env, true)
	seedRollout(t, env)
	srv, ts, _ := env.serve(env.st, Options{Data: env.st, Sources: []catalog.Source{env.src}, Channels: rolloutChannels(),
		Governance: env.st, Rollouts: RolloutOptions{Store: env.st}})
	tick := func() {
		t.Helper()
		governor.Tick(context.Background(), srv.governorOpts())
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	state := func() string {
		t.Helper()
		res, body := send(t, http.MethodGet, ts.URL+"/api/v1/channels/latest/rollout", "", "")
		if res.StatusCode != 200 {
			t.Fatalf("rollout: %d %s", res.StatusCode, body)
		}
		var r openapi.Rollout
		_ = json.Unmarshal(body, &r)
		return r.State
	}
	if got := state(); got != "running" {
		t.Fatalf("seeded rollout %s, want running", got)
	}
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	res, body := send(t, http.MethodPost, ts.URL+"/api/v1/freezes", env.tokens["root"],
		fmt.Sprintf(`{"channels":["latest"],"from":%q,"until":%q,"reason":"launch"}`, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), until))
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("freeze: %d %s", res.StatusCode, body)
	}
	var f openapi.Freeze
	_ = json.Unmarshal(body, &f)
	tick()
	if got := state(); got != "paused" {
		t.Errorf("frozen: rollout %s, want paused", got)
	}
	events, _ := env.st.History(context.Background(), "latest")
	if !slices.ContainsFunc(events, func(e resolver.AuditEvent) bool { return e.Action == "rollout-pause" && e.Actor == governor.Actor }) {
		t.Errorf("no rollout-pause by %s in the history", governor.Actor)
	}
	if res, _ := send(t, http.MethodDelete, ts.URL+fmt.Sprintf("/api/v1/freezes/%d", f.ID), env.tokens["root"], ""); res.StatusCode != 200 {
		t.Fatal("cancel freeze")
	}
	tick()
	tick() // the hold lifts, then the rollout resumes
	if got := state(); got != "running" {
		t.Errorf("after the freeze: rollout %s, want running", got)
	}
	// A person's pause is theirs: no freeze, no resume.
	if res, body := send(t, http.MethodPost, ts.URL+"/api/v1/channels/latest/rollout/pause", env.tokens["ci-promote"], `{"reason":"looking"}`); res.StatusCode != 200 {
		t.Fatalf("pause: %d %s", res.StatusCode, body)
	}
	tick()
	if got := state(); got != "paused" {
		t.Errorf("a person's pause: rollout %s after a tick, want paused", got)
	}
}
