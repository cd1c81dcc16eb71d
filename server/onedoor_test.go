package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// problemOf is a refusal's problem type and detail.
func problemOf(t *testing.T, body []byte) openapi.Problem {
	t.Helper()
	var p openapi.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("not a problem: %s", body)
	}
	return p
}

func freezeNow(t *testing.T, ts *httptest.Server, admin, channels, reason string) openapi.Freeze {
	t.Helper()
	body := fmt.Sprintf(`{"channels":[%q],"from":%q,"until":%q,"reason":%q}`, channels,
		time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339), reason)
	res, b := send(t, http.MethodPost, ts.URL+"/api/v1/freezes", admin, body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("freeze: %d %s", res.StatusCode, b)
	}
	var f openapi.Freeze
	_ = json.Unmarshal(b, &f)
	return f
}

// TestAnOverrideDoesNotSkipApprovals: the hole of old, closed. An admin
// freezes a channel that needs two approvals, pins it with
// override_freeze and lifts the freeze: the pin is a pending change all
// along, and applies only with two approvals, at once.
func TestAnOverrideDoesNotSkipApprovals(t *testing.T) {
	env := newPGEnv(t, Options{})
	srv, ts := env.governed(env.st)
	tick := func() {
		governor.Tick(context.Background(), srv.governorOpts())
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	lead, err := env.st.CreateToken(context.Background(), "release-lead", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := channel(t, ts, "v1.33")
	f := freezeNow(t, ts, env.tokens["root"], "v1.33", "launch")
	tick()
	res, body := send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.33/pin", env.tokens["root"], `{"version":"v1.33.5+k3s1","override_freeze":true,"reason":"skip"}`)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("an admin's overriding pin of a channel needing approvals: %d %s, want 202 pending", res.StatusCode, body)
	}
	ch := decodeChange(t, body)
	if res, _ := send(t, http.MethodDelete, ts.URL+fmt.Sprintf("/api/v1/freezes/%d", f.ID), env.tokens["root"], ""); res.StatusCode != 200 {
		t.Fatal("cancel freeze")
	}
	tick()
	tick()
	if now, _ := channel(t, ts, "v1.33"); str(now.Version) != str(before.Version) {
		t.Fatalf("with no approval the channel moved to %s (was %s)", str(now.Version), str(before.Version))
	}
	for i, tok := range []string{env.tokens["ci-promote"], lead} {
		res, body := send(t, http.MethodPost, ts.URL+fmt.Sprintf("/api/v1/changes/%d/approve", ch.ID), tok, "")
		if res.StatusCode != 200 {
			t.Fatalf("approval %d: %d %s", i+1, res.StatusCode, body)
		}
	}
	if now, _ := channel(t, ts, "v1.33"); str(now.Version) != "v1.33.5+k3s1" {
		t.Fatalf("approved: the channel serves %s, want v1.33.5+k3s1", str(now.Version))
	}
}

// TestAFrozenOrClosedRolloutRefusesItsControls: a frozen channel's
// rollout refuses advance and resume (409 freeze, naming it); outside its
// windows they are refused (409 window, naming the next window's HH:MM);
// an admin's override proceeds, and the governor leaves that resume alone;
// override_freeze from anyone else is 403 scope; pause and halt always
// pass.
func TestAFrozenOrClosedRolloutRefusesItsControls(t *testing.T) {
	env := newPGEnv(t, Options{})
	serveRollouts(t, env, true)
	seedRollout(t, env)
	chs := rolloutChannels()
	srv, ts, _ := env.serve(env.st, Options{Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs,
		Governance: env.st, Rollouts: RolloutOptions{Store: env.st}})
	tick := func() {
		t.Helper()
		governor.Tick(context.Background(), srv.governorOpts())
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	control := func(action, tok, body string) (int, openapi.Problem, []byte) {
		t.Helper()
		res, b := send(t, http.MethodPost, ts.URL+"/api/v1/channels/latest/rollout/"+action, tok, body)
		var p openapi.Problem
		if res.StatusCode >= 400 {
			p = problemOf(t, b)
		}
		return res.StatusCode, p, b
	}
	freezeNow(t, ts, env.tokens["root"], "latest", "launch")
	tick()
	for _, action := range []string{"advance", "resume"} {
		code, p, _ := control(action, env.tokens["ci-promote"], `{"reason":"go"}`)
		if code != http.StatusConflict || p.Type != "urn:tidemark:problem:freeze" || !strings.Contains(p.Detail, "launch") {
			t.Errorf("%s of a frozen rollout: %d %+v, want 409 urn:tidemark:problem:freeze naming the freeze", action, code, p)
		}
	}
	if code, p, _ := control("advance", env.tokens["ci-promote"], `{"override_freeze":true}`); code != http.StatusForbidden || p.Type != "urn:tidemark:problem:scope" {
		t.Errorf("override by a promoter: %d %+v, want 403 urn:tidemark:problem:scope", code, p)
	}
	if code, _, b := control("pause", env.tokens["ci-promote"], `{"reason":"safety"}`); code != http.StatusOK && code != http.StatusConflict {
		t.Errorf("pause of a frozen rollout: %d %s, want it to pass the decision", code, b)
	}
	if code, _, b := control("resume", env.tokens["root"], `{"override_freeze":true,"reason":"hotfix"}`); code != http.StatusOK {
		t.Fatalf("an admin's overriding resume: %d %s", code, b)
	}
	tick()
	res, body := send(t, http.MethodGet, ts.URL+"/api/v1/channels/latest/rollout", "", "")
	var r openapi.Rollout
	_ = json.Unmarshal(body, &r)
	if res.StatusCode != 200 || r.State != "running" {
		t.Errorf("after an admin's overriding resume and a governor round: %s, want running", r.State)
	}

	// Outside the channel's windows: a replica whose latest has a window
	// opening two hours from now.
	start := time.Now().UTC().Add(2 * time.Hour)
	days, _ := resolver.ParseDays([]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"})
	m := start.Hour()*60 + start.Minute()
	for i := range chs {
		if chs[i].Name == "latest" {
			chs[i].Windows = []resolver.Window{{Days: days, Start: m, End: (m + 60) % (24 * 60), Location: time.UTC}}
		}
	}
	_, wts, _ := env.serve(env.st, Options{Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs,
		Governance: env.st, Rollouts: RolloutOptions{Store: env.st}})
	if res, _ := send(t, http.MethodGet, ts.URL+"/api/v1/freezes", "", ""); res.StatusCode != 200 {
		t.Fatal("freezes")
	}
	var fl openapi.FreezeList
	_, b := send(t, http.MethodGet, ts.URL+"/api/v1/freezes", "", "")
	_ = json.Unmarshal(b, &fl)
	for _, f := range fl.Freezes {
		send(t, http.MethodDelete, ts.URL+fmt.Sprintf("/api/v1/freezes/%d", f.ID), env.tokens["root"], "")
	}
	res, body = send(t, http.MethodPost, wts.URL+"/api/v1/channels/latest/rollout/advance", env.tokens["ci-promote"], `{"reason":"go"}`)
	p := problemOf(t, body)
	if want := fmt.Sprintf("next opens at %02d:%02d", m/60, m%60); res.StatusCode != http.StatusConflict || p.Type != "urn:tidemark:problem:window" || !strings.Contains(p.Detail, want) {
		t.Errorf("advance outside the windows: %d %+v, want 409 urn:tidemark:problem:window saying %q", res.StatusCode, p, want)
	}
	if res, body := send(t, http.MethodPost, wts.URL+"/api/v1/channels/latest/rollout/advance", env.tokens["root"], `{"override_freeze":true}`); res.StatusCode != 200 {
		t.Errorf("an admin's overriding advance outside the windows: %d %s", res.StatusCode, body)
	}
}

// TestRefusalsNameTheRule: a limited token's pin of another channel is
// 403 scope, as is override_freeze from a promoter; a pin of a frozen
// channel is 409 freeze.
func TestRefusalsNameTheRule(t *testing.T) {
	env := newPGEnv(t, Options{})
	_, ts := env.governed(env.st)
	limited, err := env.st.CreateChannelToken(context.Background(), "dev-bot", []string{ScopePromote}, []string{"v1.32"})
	if err != nil {
		t.Fatal(err)
	}
	res, body := send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.33/pin", limited, `{"version":"v1.33.5+k3s1"}`)
	if p := problemOf(t, body); res.StatusCode != 403 || p.Type != "urn:tidemark:problem:scope" {
		t.Errorf("a limited token's pin elsewhere: %d %+v, want 403 scope", res.StatusCode, p)
	}
	freezeNow(t, ts, env.tokens["root"], "v1.32", "audit")
	res, body = send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.32/pin", env.tokens["ci-promote"], `{"version":"v1.32.5+k3s1","override_freeze":true}`)
	if p := problemOf(t, body); res.StatusCode != 403 || p.Type != "urn:tidemark:problem:scope" || !strings.Contains(p.Detail, "admin") {
		t.Errorf("override by a promoter: %d %+v, want 403 scope naming admin", res.StatusCode, p)
	}
	res, body = send(t, http.MethodPut, ts.URL+"/api/v1/channels/v1.32/pin", env.tokens["ci-promote"], `{"version":"v1.32.5+k3s1"}`)
	if p := problemOf(t, body); res.StatusCode != 409 || p.Type != "urn:tidemark:problem:freeze" || !strings.Contains(p.Detail, "audit") {
		t.Errorf("pin of a frozen channel: %d %+v, want 409 freeze", res.StatusCode, p)
	}
}
