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
)

// renovateBin is Renovate as scripts/test-deps installs it (npm
// renovate@39, the last line that runs on Debian's node 20), or on PATH.
func renovateBin(t *testing.T) string {
	t.Helper()
	if p, err := filepath.Abs("../bin/renovate/node_modules/.bin/renovate"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("renovate")
	if err != nil {
		t.Fatal("renovate is not installed: run scripts/test-deps (make test does)")
	}
	return p
}

// TestRenovateReadsAChannelsReleases runs a real Renovate (offline, local
// platform, lookup only) against GET /api/v1/channels/{name}/releases as a
// custom datasource: it proposes the channel's newest servable version and
// never a blocked one (CONTRACT section 14).
func TestRenovateReadsAChannelsReleases(t *testing.T) {
	bin := renovateBin(t)
	env := newPGEnv(t, Options{})
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.6-k3s1/block", "ci-promote", `{"reason":"etcd"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("block: %d %s", res.StatusCode, body)
	}
	_, body := get(t, env.ts, "/api/v1/channels/v1.33/releases")
	var rel openapi.ChannelReleases
	if err := json.Unmarshal(body, &rel); err != nil || len(rel.Releases) < 2 {
		t.Fatalf("releases %s (%v)", body, err)
	}
	oldest, newest := rel.Releases[0].Version, rel.Releases[len(rel.Releases)-1].Version

	repo := t.TempDir()
	cfg := `{"customDatasources": {"tidemark": {"defaultRegistryUrlTemplate": "` + env.ts.URL + `/api/v1/channels/v1.33/releases"}},
	  "customManagers": [{"customType": "regex", "fileMatch": ["^versions\\.txt$"],
	    "matchStrings": ["k3s: (?<currentValue>\\S+)"], "depNameTemplate": "k3s",
	    "datasourceTemplate": "custom.tidemark", "versioningTemplate": "loose"}]}`
	for name, content := range map[string]string{"renovate.json": cfg, "versions.txt": "k3s: " + oldest + "\n"} {
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
		t.Fatalf("renovate proposed nothing from %s; its output:\n%s", oldest, out)
	}
	for _, m := range proposed {
		if v := string(m[1]); v == "v1.33.6-k3s1" {
			t.Errorf("renovate proposed the blocked %s", v)
		}
	}
	if got := string(proposed[len(proposed)-1][1]); got != newest {
		t.Errorf("renovate proposed %s, want the channel's newest servable %s", got, newest)
	}
}
