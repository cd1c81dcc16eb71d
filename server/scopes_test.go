package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
)

// TestForbiddenNamesEveryScopeThatWould checks that a 403 tells the caller
// every scope that would have been enough (section 3: a scan needs scan or
// promote, admin implies both; the fleet reads take read, promote or
// admin), not only the narrowest, so nobody mints a needless token.
func TestForbiddenNamesEveryScopeThatWould(t *testing.T) {
	env := newPGEnv(t, Options{})
	tok, err := env.st.CreateToken(context.Background(), "reader", []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	env.tokens["reader"] = tok
	tests := []struct {
		name, method, path, token, body, want string
	}{
		{"a read token scanning is told scan, promote or admin", http.MethodPost, "/api/v1/sources/k3s/scan", "reader", "", "this needs scan, promote or admin"},
		{"a scan token pinning is told promote or admin", http.MethodPut, "/api/v1/channels/v1.33/pin", "scanner", `{"version":"v1.33.5+k3s1"}`, "this needs promote or admin"},
		{"a scan token reading notifications is told read, promote or admin", http.MethodGet, "/api/v1/notifications", "scanner", "", "this needs read, promote or admin"},
		{"a read token sending a webhook is told scan, promote or admin", http.MethodPost, "/api/v1/webhooks/distribution", "reader", `{"events":[]}`, "webhooks need scan, promote or admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := do(t, env, env.ts, tt.method, tt.path, tt.token, tt.body)
			if res.StatusCode != http.StatusForbidden {
				t.Fatalf("%d %s, want 403", res.StatusCode, body)
			}
			var p openapi.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("not a problem: %v: %s", err, body)
			}
			if !strings.Contains(p.Detail, tt.want) {
				t.Errorf("detail %q does not say %q", p.Detail, tt.want)
			}
		})
	}
}
