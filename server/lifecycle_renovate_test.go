package server

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// TestRenovateSkipsAnExpiredLine runs a real Renovate on a channel whose
// newest line (1.34) has expired: the feed marks its release
// isDeprecated, and Renovate (ignoreDeprecated, its default) proposes the
// newest version of a line that has not, never the expired one.
func TestRenovateSkipsAnExpiredLine(t *testing.T) {
	bin := renovateBin(t)
	ended := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	e := startWithPolicy(t, lifecycle.Policy{End: map[string]time.Time{"1.34": ended}},
		[]catalog.Channel{{Name: "latest", Source: "k3s", Stream: resolver.Released}},
		"v1.33.5-k3s1", "v1.33.6-k3s1", "v1.34.1-k3s1")
	_, b := e.do(http.MethodGet, "/api/v1/channels/latest/releases", "")
	var rel openapi.ChannelReleases
	if err := json.Unmarshal(b, &rel); err != nil || len(rel.Releases) != 3 || !rel.Releases[2].IsDeprecated || rel.Releases[1].IsDeprecated {
		t.Fatalf("feed: %s (%v)", b, err)
	}

	repo := t.TempDir()
	cfg := `{"customDatasources": {"tidemark": {"defaultRegistryUrlTemplate": "` + e.url + `/api/v1/channels/latest/releases"}},
	  "customManagers": [{"customType": "regex", "fileMatch": ["^versions\\.txt$"],
	    "matchStrings": ["k3s: (?<currentValue>\\S+)"], "depNameTemplate": "k3s",
	    "datasourceTemplate": "custom.tidemark", "versioningTemplate": "loose"}]}`
	for name, content := range map[string]string{"renovate.json": cfg, "versions.txt": "k3s: v1.33.5-k3s1\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--platform=local", "--dry-run=lookup")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "LOG_LEVEL=debug", "RENOVATE_BASE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("renovate: %v\n%s", err, out)
	}
	proposed := regexp.MustCompile(`"newVersion": "([^"]+)"`).FindAllSubmatch(out, -1)
	if len(proposed) == 0 {
		t.Fatalf("renovate proposed nothing; its output:\n%s", out)
	}
	for _, m := range proposed {
		if v := string(m[1]); v == "v1.34.1-k3s1" {
			t.Errorf("renovate proposed %s, of an expired line", v)
		}
	}
	if got := string(proposed[len(proposed)-1][1]); got != "v1.33.6-k3s1" {
		t.Errorf("renovate proposed %s, want v1.33.6-k3s1", got)
	}
}
