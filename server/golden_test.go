package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/testutil"
)

// get performs a GET through ts with extra headers and returns the
// response with its body read.
func get(t *testing.T, ts *httptest.Server, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return send(t, http.MethodGet, ts.URL+path, "", "", hdr...)
}

// checkGolden compares JSON body with testdata/name.golden (indented).
func checkGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, body, "", "  "); err != nil {
		t.Fatalf("%s: response is not JSON: %v\n%s", name, err, body)
	}
	pretty.WriteByte('\n')
	testutil.Golden(t, filepath.Join("testdata", name+".golden"), pretty.Bytes())
}

func TestGoldenJSONShapes(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "https://tidemark.example.com")
	tests := []struct {
		golden string
		path   string
		status int
		ctype  string
	}{
		{"release_channels", "/v1-release/channels", 200, "application/json"},
		{"release_not_found", "/v1-release/channels/nope", 404, "application/json"},
		{"channels", "/api/v1/channels", 200, "application/json"},
		{"channel_stable", "/api/v1/channels/stable", 200, "application/json"},
		{"channel_nothing_eligible", "/api/v1/channels/v1.99", 200, "application/json"},
		{"sources", "/api/v1/sources", 200, "application/json"},
		{"source", "/api/v1/sources/k3s", 200, "application/json"},
		{"versions_released_1.33", "/api/v1/sources/k3s/versions?stream=released&constraint=~1.33", 200, "application/json"},
		{"version", "/api/v1/sources/k3s/versions/v1.33.6+k3s2", 200, "application/json"},
		{"resolve", "/api/v1/resolve?source=k3s&current=v1.31.2%2Bk3s1&stream=released", 200, "application/json"},
		{"resolve_nothing_newer", "/api/v1/resolve?source=k3s&current=v1.34.2-k3s2&stream=released", 200, "application/json"},
		{"problem_unknown_channel", "/api/v1/channels/nope", 404, "application/problem+json"},
		{"problem_missing_current", "/api/v1/resolve?source=k3s", 400, "application/problem+json"},
		{"problem_bad_stream", "/api/v1/sources/k3s/versions?stream=nightly", 400, "application/problem+json"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			res, body := get(t, ts, tt.path)
			if res.StatusCode != tt.status {
				t.Errorf("GET %s: status %d, want %d; body %s", tt.path, res.StatusCode, tt.status, body)
			}
			if got := res.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("GET %s: Content-Type %q, want %q", tt.path, got, tt.ctype)
			}
			checkGolden(t, tt.golden, body)
		})
	}
}
