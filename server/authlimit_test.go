package server

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/server/core"
)

// TestFailedAuthenticationsAreRateLimitedPerAddress: a client guessing
// tokens gets a few 401s, then 429 with Retry-After; valid tokens never
// use up the budget, and another address is not affected.
func TestFailedAuthenticationsAreRateLimitedPerAddress(t *testing.T) {
	// The production limit, over a window a loaded machine cannot outlast.
	env := newPGEnv(t, Options{AuthFailWindow: time.Hour})
	const pin = "/api/v1/channels/v1.33/pin"
	// Successes cost nothing: more of them than the failure budget.
	for i := range core.AuthFailLimit + 5 {
		if res, body := do(t, env, env.ts, http.MethodDelete, "/api/v1/sources/k3s/versions/v1.33.5-k3s1/block", "root", ""); res.StatusCode != http.StatusNotFound {
			t.Fatalf("valid token, request %d: %d %s, want the handler's 404 (not blocked)", i, res.StatusCode, body)
		}
	}
	for i := range core.AuthFailLimit {
		if res, body := do(t, env, env.ts, http.MethodPut, pin, "Bearer tdm_guess"+strconv.Itoa(i), `{"version":"v1.33.5-k3s1"}`); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d %s, want 401", i, res.StatusCode, body)
		}
	}
	res, body := do(t, env, env.ts, http.MethodPut, pin, "Bearer tdm_guess", `{"version":"v1.33.5-k3s1"}`)
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("guess after %d failures: %d %s %s, want 429 problem+json", core.AuthFailLimit, res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || n < 1 {
		t.Errorf("Retry-After %q, want whole seconds", res.Header.Get("Retry-After"))
	}
	var p openapi.Problem
	if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, "too many failed authentications") {
		t.Errorf("detail %q (%v)", p.Detail, err)
	}

	// Another address (all of 127/8 is loopback) with a valid token.
	other := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext,
	}}
	req, err := http.NewRequest(http.MethodPut, env.ts.URL+pin, strings.NewReader(`{"version":"v1.33.5-k3s1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+env.tokens["ci-promote"])
	res, err = other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("valid token from another address while 127.0.0.1 is limited: %d, want 200", res.StatusCode)
	}
}
