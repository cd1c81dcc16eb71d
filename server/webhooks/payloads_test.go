package webhooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseWebhookPayloads(t *testing.T) {
	k3s := func(host string, del bool, tag string) PushEvent {
		return PushEvent{Host: host, Repository: "rancher/k3s-upgrade", Tag: tag, Delete: del}
	}
	tests := []struct {
		kind, file string
		want       []PushEvent
	}{
		{"distribution", "distribution.json", []PushEvent{k3s("127.0.0.1:5000", false, "v1.33.6-k3s1"), k3s("127.0.0.1:5000", true, "v1.33.5-k3s1")}},
		{"harbor", "harbor.json", []PushEvent{k3s("harbor.example.com", false, "v1.33.6-k3s1")}},
		{"quay", "quay.json", []PushEvent{k3s("quay.io", false, "v1.33.6-k3s1")}},
		{"quay", "quay-old.json", []PushEvent{k3s("quay.io", false, "v1.33.6-k3s1")}},
		{"github", "github.json", []PushEvent{k3s("ghcr.io", false, "v1.33.6-k3s1")}},
		{"dockerhub", "dockerhub.json", []PushEvent{k3s("docker.io", false, "v1.33.6-k3s1")}},
	}
	for _, tt := range tests {
		t.Run(tt.file+" names its tags", func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "payloads", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(tt.kind, body)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
	t.Run("not JSON is an error naming the kind", func(t *testing.T) {
		if _, err := Parse("harbor", []byte("<html>")); err == nil || !strings.Contains(err.Error(), "harbor webhook payload") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a Harbor pull is no event", func(t *testing.T) {
		if got, err := Parse("harbor", []byte(`{"type":"PULL_ARTIFACT","event_data":{"resources":[{"tag":"x"}],"repository":{"repo_full_name":"a/b"}}}`)); err != nil || len(got) != 0 {
			t.Errorf("got %v, %v", got, err)
		}
	})
}
