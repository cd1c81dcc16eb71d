package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

func TestAccessLogModes(t *testing.T) {
	for _, tc := range []struct {
		mode           string
		wantOK         int // lines for 300 redirects
		wantNotFound   int // lines for 5 unknown channels
		wantSampleAttr bool
	}{
		{"all", 300, 5, false},
		{"", 3, 5, true}, // sample, the default
		{"sample", 3, 5, true},
		{"off", 0, 5, false},
	} {
		t.Run("mode "+tc.mode+" logs every error", func(t *testing.T) {
			logs := &testutil.LockedBuffer{}
			snap := k3sSnapshot(t)
			s, err := New(Options{
				AccessLog: tc.mode,
				Log:       slog.New(slog.NewTextHandler(logs, nil)),
				Load:      func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Reload(context.Background()); err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			for range 300 {
				get(t, ts, "/v1-release/channels/stable")
			}
			for range 5 {
				get(t, ts, "/v1-release/channels/nope")
			}
			ok := strings.Count(logs.String(), "status=302")
			notFound := strings.Count(logs.String(), "status=404")
			if ok != tc.wantOK || notFound != tc.wantNotFound {
				t.Errorf("%d lines of 302 and %d of 404, want %d and %d", ok, notFound, tc.wantOK, tc.wantNotFound)
			}
			if got := strings.Contains(logs.String(), "sample=100"); got != tc.wantSampleAttr {
				t.Errorf("sample=100 in the log: %v, want %v", got, tc.wantSampleAttr)
			}
		})
	}
}

func TestAccessLogModeUnknownIsRefused(t *testing.T) {
	_, err := New(Options{AccessLog: "some", Load: func(context.Context) (*snapshot.Snapshot, error) { return nil, nil }})
	if err == nil || !strings.Contains(err.Error(), `access log "some": want all, sample or off`) {
		t.Fatalf("err = %v, want the mode named", err)
	}
}

// TestNoSecretInALogLine: a request carrying a secret in any parameter the
// docs list, or a Tidemark token in any value, is logged with *** in its
// place, whatever its outcome (here a 401, a 404 and a 302), in the
// access log and in the error log alike.
func TestNoSecretInALogLine(t *testing.T) {
	env := newPGEnv(t, Options{AccessLog: AccessLogAll})
	tok := env.tokens["scanner"]
	secret := "s3cr3t-value"
	paths := []string{
		"/api/v1/sources/k3s/scan?token=" + tok, // a valid token where it is not read: refused
		"/v1-release/channels/stable?current=v1.0.0&TOKEN=" + secret,
		"/v1-release/channels/stable?bearer=" + secret + "&access_token=" + secret,
		"/v1-release/channels/stable?password=" + secret + "&secret=" + secret + "&key=" + secret,
		"/v1-release/channels/nope?sig=" + secret + "&signature=" + secret,
		"/v1-release/channels/stable?q=" + tok,
		"/v1-release/channels/stable?q=" + strings.Replace(tok, "_", "%5F", 1),
		"/v2/channels/" + tok + "/tags/list",
	}
	// Redirects are answers here, never followed.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, p := range paths {
		req, _ := http.NewRequest(http.MethodGet, env.ts.URL+p, nil)
		req.Header.Set("X-SUC-Cluster-ID", tok)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	logs := env.logs.String()
	if n := strings.Count(logs, "msg=request"); n < len(paths) {
		t.Fatalf("%d access log lines for %d requests:\n%s", n, len(paths), logs)
	}
	bare := strings.TrimPrefix(tok, "tdm_")
	for _, leak := range []string{bare, secret} {
		if strings.Contains(logs, leak) {
			t.Errorf("a secret is in the log:\n%s", logs)
		}
	}
	for _, want := range []string{"token=***", "TOKEN=***", "bearer=***", "access_token=***", "password=***", "secret=***",
		"key=***", "sig=***", "signature=***", "q=***", "current=v1.0.0", "/v2/channels/***/tags/list", "suc_cluster_id=***"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}
