package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/capi"
	"github.com/tidemark-dev/tidemark/server/core"
)

// TestRoutesThatTakeNoBodyStillBoundIt: scan, sign-out and cancelling a
// freeze take no body. One of up to 64 KiB is read and ignored; one byte
// more, or 8 MiB sent with or without a length, is 413 naming the limit,
// and the route did nothing (issue 53 item 2: scan answered an 8 MiB body
// 202 and /ui/logout 303).
func TestRoutesThatTakeNoBodyStillBoundIt(t *testing.T) {
	var scans atomic.Int64
	env := newPGEnv(t, Options{Scan: func(context.Context, string) (bool, error) { scans.Add(1); return false, nil }})
	_, ts, _ := env.serve(env.st, Options{Governance: env.st})
	freezeID := func() string {
		res, body := send(t, http.MethodPost, ts.URL+"/api/v1/freezes", env.tokens["root"],
			`{"channels":["v1.*"],"from":"2026-01-01T00:00:00Z","until":"2099-01-01T00:00:00Z","reason":"x"}`)
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("freeze: %d %s", res.StatusCode, body)
		}
		var f openapi.Freeze
		_ = json.Unmarshal(body, &f)
		return fmt.Sprint(f.ID)
	}
	type route struct {
		name, method, base, token string
		path                      func() string
		ok                        int
		hdr                       []string
	}
	routes := []route{
		{"scan", http.MethodPost, env.ts.URL, env.tokens["scanner"], func() string { return "/api/v1/sources/k3s/scan" }, http.StatusAccepted, nil},
		{"sign-out", http.MethodPost, env.ts.URL, "", func() string { return "/ui/logout" }, http.StatusSeeOther, []string{"Origin", env.ts.URL}},
		{"cancel a freeze", http.MethodDelete, ts.URL, env.tokens["root"], func() string { return "/api/v1/freezes/" + freezeID() }, http.StatusOK, nil},
	}
	for _, r := range routes {
		t.Run(r.name+": 64 KiB is ignored", func(t *testing.T) {
			res, body := send(t, r.method, r.base+r.path(), r.token, strings.Repeat("x", core.MaxWriteBody), r.hdr...)
			if res.StatusCode != r.ok {
				t.Errorf("%d %.300s, want %d", res.StatusCode, body, r.ok)
			}
		})
		for _, tc := range []struct {
			name   string
			size   int
			length bool
		}{{"one byte over", core.MaxWriteBody + 1, true}, {"8 MiB", 8 << 20, true}, {"8 MiB chunked", 8 << 20, false}} {
			t.Run(r.name+": "+tc.name+" is 413", func(t *testing.T) {
				before := scans.Load()
				var body io.Reader = strings.NewReader(strings.Repeat("x", tc.size))
				if !tc.length {
					body = io.MultiReader(body) // no Len: sent chunked
				}
				req, _ := http.NewRequest(r.method, r.base+r.path(), body)
				if r.token != "" {
					req.Header.Set("Authorization", "Bearer "+r.token)
				}
				for i := 0; i+1 < len(r.hdr); i += 2 {
					req.Header.Set(r.hdr[i], r.hdr[i+1])
				}
				res, err := noRedirects.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				var p openapi.Problem
				_ = json.Unmarshal(b, &p)
				if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(p.Detail, "65536") {
					t.Errorf("%d %.300s, want 413 with a detail naming 65536", res.StatusCode, b)
				}
				if scans.Load() != before {
					t.Error("the scan ran although its request was refused")
				}
			})
		}
	}
}

// TestClusterAPIHooksAnswer413PastTheirLimit: the Cluster API hooks take
// up to 1 MiB; past it they answer 413 naming the limit like every other
// route, not a 400 saying the body is malformed.
func TestClusterAPIHooksAnswer413PastTheirLimit(t *testing.T) {
	snap := k3sSnapshot(t)
	srv, err := New(Options{Load: func(context.Context) (*snapshot.Snapshot, error) { return snap, nil }, ClusterAPI: []string{"k3s"}})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	for _, path := range []string{capi.Prefix + "/discovery", capi.Prefix + "/generateupgradeplan/k3s"} {
		res, body := send(t, http.MethodPost, base+path, "", `{"x":"`+strings.Repeat("a", capi.MaxBody)+`"}`)
		var p openapi.Problem
		_ = json.Unmarshal(body, &p)
		if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(p.Detail, "1048576") {
			t.Errorf("%s past 1 MiB: %d %.300s, want 413 naming 1048576", path, res.StatusCode, body)
		}
	}
}
