package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/server/webhooks"
)

// pushRecorder stands for the indexer: it records events and indexes only
// rancher/k3s-upgrade.
type pushRecorder struct {
	mu  sync.Mutex
	evs []webhooks.PushEvent
}

func (p *pushRecorder) push(_ context.Context, ev webhooks.PushEvent, _ time.Time) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evs = append(p.evs, ev)
	if ev.Repository == "rancher/k3s-upgrade" {
		return 1, nil
	}
	return 0, nil
}

func secretFunc(s string) webhooks.SecretFunc {
	return func() ([]byte, error) { return []byte(s), nil }
}

func readPayload(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("webhooks", "testdata", "payloads", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestWebhooksAuthenticateAsEachRegistryCan(t *testing.T) {
	rec := &pushRecorder{}
	env := newPGEnv(t, Options{Push: rec.push, GitHubSecret: secretFunc("gh-secret"), DockerHubSecret: secretFunc("hub-secret")})
	dist, gh, hub := readPayload(t, "distribution.json"), readPayload(t, "github.json"), readPayload(t, "dockerhub.json")
	unknown := strings.ReplaceAll(dist, "rancher/k3s-upgrade", "someone/else")
	tests := []struct {
		name, path, token, body string
		hdr                     []string
		status                  int
		want                    openapi.WebhookResult
	}{
		{"distribution without a token is 401", "/api/v1/webhooks/distribution", "", dist, nil, 401, openapi.WebhookResult{}},
		{"distribution with a scan token queues its tags", "/api/v1/webhooks/distribution", "scanner", dist,
			[]string{"Content-Type", "application/vnd.docker.distribution.events.v1+json"}, 202, openapi.WebhookResult{Tags: 2, Queued: 2}},
		{"an unknown repository is accepted and ignored", "/api/v1/webhooks/distribution", "scanner", unknown, nil, 202, openapi.WebhookResult{Tags: 2, Ignored: 2}},
		{"a promote token may send webhooks", "/api/v1/webhooks/harbor", "ci-promote", readPayload(t, "harbor.json"), nil, 202, openapi.WebhookResult{Tags: 1, Queued: 1}},
		{"quay's token may come in the query", "/api/v1/webhooks/quay?access_token=" + env.tokens["scanner"], "", readPayload(t, "quay.json"), nil, 202, openapi.WebhookResult{Tags: 1, Queued: 1}},
		{"a wrong query token is 401", "/api/v1/webhooks/quay?access_token=nope", "", readPayload(t, "quay.json"), nil, 401, openapi.WebhookResult{}},
		{"github signed right", "/api/v1/webhooks/github", "", gh, []string{"X-Hub-Signature-256", sign("gh-secret", gh), "X-GitHub-Event", "package"}, 202, openapi.WebhookResult{Tags: 1, Queued: 1}},
		{"github signed with another secret is 401", "/api/v1/webhooks/github", "", gh, []string{"X-Hub-Signature-256", sign("other", gh), "X-GitHub-Event", "package"}, 401, openapi.WebhookResult{}},
		{"github unsigned is 401", "/api/v1/webhooks/github", "", gh, []string{"X-GitHub-Event", "package"}, 401, openapi.WebhookResult{}},
		{"github ping is accepted and names nothing", "/api/v1/webhooks/github", "", `{"zen":"x"}`, []string{"X-Hub-Signature-256", sign("gh-secret", `{"zen":"x"}`), "X-GitHub-Event", "ping"}, 202, openapi.WebhookResult{}},
		{"docker hub with the secret", "/api/v1/webhooks/dockerhub/hub-secret", "", hub, nil, 202, openapi.WebhookResult{Tags: 1, Queued: 1}},
		{"docker hub with a wrong secret is 403", "/api/v1/webhooks/dockerhub/hub-secre", "", hub, nil, 403, openapi.WebhookResult{}},
		{"a payload that is not JSON is 400", "/api/v1/webhooks/distribution", "scanner", "not json", nil, 400, openapi.WebhookResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, body := do(t, env, env.ts, http.MethodPost, tt.path, tt.token, tt.body, tt.hdr...)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d %s, want %d", res.StatusCode, body, tt.status)
			}
			if tt.status != 202 {
				return
			}
			var got openapi.WebhookResult
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("answer %+v, want %+v", got, tt.want)
			}
		})
	}
	_, metrics := get(t, env.ts, "/metrics")
	for _, want := range []string{
		`tidemark_webhook_events_total{kind="distribution",outcome="queued"} 2`,
		`tidemark_webhook_events_total{kind="distribution",outcome="unknown_repository"} 2`,
		`tidemark_webhook_events_total{kind="dockerhub",outcome="rejected"} 1`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestWebhooksOnAReplicaThatDoesNotIndexAre503(t *testing.T) {
	env := newPGEnv(t, Options{})
	res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/distribution", "scanner", readPayload(t, "distribution.json"))
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "--no-index") {
		t.Errorf("status %d %s, want 503 naming --no-index", res.StatusCode, body)
	}
	res, _ = do(t, env, env.ts, http.MethodPost, "/api/v1/webhooks/github", "", `{}`, "X-Hub-Signature-256", sign("x", "{}"))
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("github webhook without a configured secret: %d, want 404", res.StatusCode)
	}
}

func TestNotificationsNeedAReadScope(t *testing.T) {
	env := newPGEnv(t, Options{})
	tok, err := env.st.CreateToken(context.Background(), "reader", []string{ScopeRead})
	if err != nil {
		t.Fatal(err)
	}
	env.tokens["reader"] = tok
	res, _ := do(t, env, env.ts, http.MethodGet, "/api/v1/notifications", "", "")
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", res.StatusCode)
	}
	// Without a deliverer wired, the route says so once authorised.
	res, body := do(t, env, env.ts, http.MethodGet, "/api/v1/notifications", "scanner", "")
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("scan token: %d %s, want 403", res.StatusCode, body)
	}
	for _, name := range []string{"reader", "ci-promote", "root"} {
		res, body = do(t, env, env.ts, http.MethodGet, "/api/v1/notifications", name, "")
		if res.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s token without a deliverer: %d %s, want 503", name, res.StatusCode, body)
		}
	}
}
