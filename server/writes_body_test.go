package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
)

// TestWriteBodiesAreOneJSONValue: a write body that is not declared JSON is
// 415, one with anything after the JSON value is 400, and neither changes
// anything; JSON with a charset or trailing whitespace is fine.
func TestWriteBodiesAreOneJSONValue(t *testing.T) {
	env := newPGEnv(t, Options{})
	for _, tc := range []struct {
		name, ctype, body string
		want              int
		detail            string
	}{
		{"text/plain is 415", "text/plain", `{"version":"v1.33.5-k3s1"}`, http.StatusUnsupportedMediaType, `Content-Type "text/plain"`},
		{"a form (curl -d) is 415", "application/x-www-form-urlencoded", `{"version":"v1.33.5-k3s1"}`, http.StatusUnsupportedMediaType, "must be application/json"},
		{"no Content-Type is 415", "", `{"version":"v1.33.5-k3s1"}`, http.StatusUnsupportedMediaType, `Content-Type ""`},
		{"garbage after the value is 400", "application/json", `{"version":"v1.33.5-k3s1"} garbage`, http.StatusBadRequest, "data after the JSON value"},
		{"a second value is 400", "application/json", `{"version":"v1.33.5-k3s1"}{}`, http.StatusBadRequest, "data after the JSON value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := env.auditCount()
			res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", tc.body, "Content-Type", tc.ctype)
			if res.StatusCode != tc.want || res.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s, want %d problem+json", res.StatusCode, res.Header.Get("Content-Type"), body, tc.want)
			}
			var p openapi.Problem
			if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, tc.detail) {
				t.Errorf("detail %q (%v), want it to say %q", p.Detail, err, tc.detail)
			}
			if after := env.auditCount(); after != before {
				t.Errorf("audit events %d -> %d: a refused write left a trace", before, after)
			}
		})
	}
	for _, ctype := range []string{"application/json; charset=utf-8", "application/merge-patch+json"} {
		t.Run(ctype+" with trailing whitespace is accepted", func(t *testing.T) {
			res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.5-k3s1"}`+"\n \n", "Content-Type", ctype)
			if res.StatusCode != http.StatusOK {
				t.Errorf("%d %s, want 200", res.StatusCode, body)
			}
		})
	}
}
