package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestClusterEnrollAndRevoke: cluster enroll prints the key alone on its
// first line, then one channel URL carrying it per channel named (under
// external_url); a second enroll of the same ID is refused until it is
// revoked; a channel not in the configuration is refused.
func TestClusterEnrollAndRevoke(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	cfg := filepath.Join(t.TempDir(), "tidemark.yaml")
	if err := os.WriteFile(cfg, []byte("external_url: https://tidemark.example.com\nfleet: {enrollment: required}\n"+e2eConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &tmcli{t: t, env: map[string]string{"DATABASE_URL": storetest.URL(t), "TIDEMARK_CONFIG": cfg}}
	out := c.must("cluster", "enroll", "edge-1", "--channels", "v1.33,latest")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "tdm_") || len(lines[0]) < 4+32 {
		t.Fatalf("enroll printed %q: want the key, then two URLs", out)
	}
	key := lines[0]
	for i, ch := range []string{"v1.33", "latest"} {
		if want := "https://tidemark.example.com/v1-release/channels/" + ch + "?key=" + key; lines[i+1] != want {
			t.Errorf("URL %d = %q, want %q", i, lines[i+1], want)
		}
	}
	if code, _, errs := c.run("cluster", "enroll", "edge-1"); code == 0 || !strings.Contains(errs, "enrolled already") {
		t.Errorf("a second enroll: exit %d %q, want refused", code, errs)
	}
	if code, _, errs := c.run("cluster", "enroll", "edge-2", "--channels", "nope"); code == 0 || !strings.Contains(errs, `no channel "nope"`) {
		t.Errorf("enroll for an unknown channel: exit %d %q, want refused", code, errs)
	}
	if code, _, errs := c.run("cluster", "enroll", "bad id!"); code == 0 || !strings.Contains(errs, "cluster ID") {
		t.Errorf("enroll of a malformed ID: exit %d %q, want refused", code, errs)
	}
	c.must("cluster", "revoke", "edge-1")
	if code, _, errs := c.run("cluster", "revoke", "edge-9"); code == 0 || !strings.Contains(errs, "never enrolled") {
		t.Errorf("revoke of an unknown ID: exit %d %q", code, errs)
	}
	again := strings.Split(c.must("cluster", "enroll", "edge-1"), "\n")[0]
	if again == key || !strings.HasPrefix(again, "tdm_") {
		t.Errorf("enrolled again after revoke: key %q, want a new one", again)
	}
}
