package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
)

const etcdRisk = `{"message":"etcd migration loses leases","url":"https://example.com/etcd","from":"<1.33.5","to":">=1.34.0"}`

// TestRisksSteerClustersOverTheAPI: a risk declared over the API steers a
// cluster reporting v1.33.0 off the risky edge to v1.33.6 on the channel
// URL, resolve lists it, a cluster past it gets the channel's answer, and
// removing it restores the answer; both are audited in the channel's
// history and sent to the outbox.
func TestRisksSteerClustersOverTheAPI(t *testing.T) {
	env := newPGEnv(t, Options{})
	ask := func(reported string) string {
		t.Helper()
		res, body := do(t, env, env.ts, http.MethodGet, "/v1-release/channels/k3s-released", "", "",
			"X-SUC-Cluster-ID", "c-1", "X-SUC-Latest-Version", reported)
		if res.StatusCode != http.StatusFound {
			t.Fatalf("channel from %s: %d %s", reported, res.StatusCode, body)
		}
		return res.Header.Get("Location")
	}
	if loc := ask("v1.33.0-k3s1"); !strings.HasSuffix(loc, "v1.34.2+k3s2") {
		t.Fatalf("before any risk: %s, want the channel's v1.34.2", loc)
	}
	res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/risks/EtcdMigration", "ci-promote", etcdRisk)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT risk: %d %s\n%s", res.StatusCode, body, env.logs)
	}
	var r openapi.Risk
	if err := json.Unmarshal(body, &r); err != nil || r.Name != "EtcdMigration" || r.CreatedBy != "ci-promote" {
		t.Fatalf("PUT answer %s (%v)", body, err)
	}
	if loc := ask("v1.33.0-k3s1"); !strings.Contains(loc, "v1.33.6") {
		t.Errorf("with the risk, a v1.33.0 cluster is sent to %s, want v1.33.6", loc)
	}
	if loc := ask("v1.33.6-k3s1"); !strings.Contains(loc, "v1.34.2") {
		t.Errorf("with the risk, a v1.33.6 cluster is sent to %s, want v1.34.2 (no risk covers its edge)", loc)
	}
	_, body = get(t, env.ts, "/api/v1/resolve?channel=k3s-released&current=v1.33.0-k3s1&cluster=c-1")
	var a openapi.ResolveAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if str(a.Target) != "v1.33.6+k3s2" || len(a.Risks) == 0 || a.Risks[0].Name != "EtcdMigration" || a.Risks[0].URL != "https://example.com/etcd" {
		t.Errorf("resolve with the risk: target %s risks %+v", str(a.Target), a.Risks)
	}
	_, body = get(t, env.ts, "/api/v1/resolve?channel=k3s-released&current=v1.33.0-k3s1&accept_risks=EtcdMigration")
	if err := json.Unmarshal(body, &a); err != nil || str(a.Target) != "v1.34.2+k3s2" {
		t.Errorf("resolve accepting the risk: target %s (%v), want v1.34.2+k3s2", str(a.Target), err)
	}
	_, body = get(t, env.ts, "/api/v1/sources/k3s/risks")
	var list openapi.RiskList
	if err := json.Unmarshal(body, &list); err != nil || len(list.Risks) != 1 || list.Risks[0].From != "<1.33.5" {
		t.Errorf("risk list %s (%v)", body, err)
	}

	res, body = do(t, env, env.ts, http.MethodDelete, "/api/v1/sources/k3s/risks/EtcdMigration?reason=fixed", "ci-promote", "")
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE risk: %d %s", res.StatusCode, body)
	}
	if loc := ask("v1.33.0-k3s1"); !strings.Contains(loc, "v1.34.2") {
		t.Errorf("after removing the risk: %s, want v1.34.2", loc)
	}
	if res, _ := do(t, env, env.ts, http.MethodDelete, "/api/v1/sources/k3s/risks/EtcdMigration", "ci-promote", ""); res.StatusCode != http.StatusNotFound {
		t.Errorf("DELETE an unknown risk: %d, want 404", res.StatusCode)
	}
	events, err := env.st.ChannelHistory(context.Background(), "k3s-released", "k3s")
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 2 || events[0].Action != "risk-remove" || events[1].Action != "risk-add" || events[0].Reason != "fixed" {
		t.Errorf("channel history %+v, want risk-add then risk-remove", events)
	}
	evs, _, err := env.st.RecentEvents(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Type == "dev.tidemark.risk.changed" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d risk.changed events in the outbox, want 2", n)
	}
}

// TestRiskBadInputNamesTheField: a bad constraint, regexp, name or body is
// a 400 naming the field, a channel-limited token is refused, and nothing
// is recorded.
func TestRiskBadInputNamesTheField(t *testing.T) {
	env := newPGEnv(t, Options{})
	before := env.auditCount()
	for _, tc := range []struct{ path, body, param string }{
		{"/api/v1/sources/k3s/risks/R", `{"message":"m","from":">>1","to":"*"}`, "from"},
		{"/api/v1/sources/k3s/risks/R", `{"message":"m","from":"*","to":"1.x.y.z"}`, "to"},
		{"/api/v1/sources/k3s/risks/R", `{"message":"m","from":"*","to":"*","clusters":["ok","(bad"]}`, "clusters[1]"},
		{"/api/v1/sources/k3s/risks/R", `{"from":"*","to":"*"}`, "message"},
		{"/api/v1/sources/k3s/risks/R", `{"message":"m","from":"*","to":"*","url":"javascript:alert(1)"}`, "url"},
		{"/api/v1/sources/k3s/risks/bad%20name", `{"message":"m","from":"*","to":"*"}`, "name"},
		{"/api/v1/sources/nope/risks/R", `{"message":"m","from":"*","to":"*"}`, "source"},
	} {
		res, body := do(t, env, env.ts, http.MethodPut, tc.path, "ci-promote", tc.body)
		var p openapi.Problem
		_ = json.Unmarshal(body, &p)
		if want := http.StatusBadRequest; tc.param == "source" {
			want = http.StatusNotFound
			if res.StatusCode != want || p.Param != "source" {
				t.Errorf("%s: %d param %q, want %d naming source", tc.path, res.StatusCode, p.Param, want)
			}
		} else if res.StatusCode != want || p.Param != tc.param {
			t.Errorf("%s %s: %d param %q (%s), want 400 naming %s", tc.path, tc.body, res.StatusCode, p.Param, p.Detail, tc.param)
		}
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/risks/R", "ci-promote", `{"message":"m","from":"*","to":"*","extra":1}`); res.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown field: %d %s, want 400", res.StatusCode, body)
	}
	tok, err := env.st.CreateChannelToken(context.Background(), "stable-only", []string{ScopePromote}, []string{"stable"})
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/risks/R", "Bearer "+tok, `{"message":"m","from":"*","to":"*"}`); res.StatusCode != http.StatusForbidden {
		t.Errorf("a channel-limited token: %d, want 403", res.StatusCode)
	}
	if res, _ := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/risks/R", "", `{"message":"m","from":"*","to":"*"}`); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", res.StatusCode)
	}
	if after := env.auditCount(); after != before {
		t.Errorf("%d audit events after refused writes, want %d", after, before)
	}
}
