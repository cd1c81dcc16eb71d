package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTUFVerifyChecksAChannelFromTheShell: tuf verify, trusting only
// 1.root.json, prints the channel's verified answer; a tampered root and
// an unknown channel are refused with what went wrong.
func TestTUFVerifyChecksAChannelFromTheShell(t *testing.T) {
	dir := t.TempDir()
	rootKey, onlineKey := filepath.Join(dir, "root.pem"), filepath.Join(dir, "online.pem")
	c := startServeWith(t, e2eConfig+"tuf:\n  online_key_file: "+onlineKey+"\n", func(c *tmcli) {
		c.must("tuf", "init", "--root-key", rootKey, "--online-key", onlineKey)
	})
	base := c.env["TIDEMARK_SERVER"]
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := http.Get(base + "/tuf/metadata/timestamp.json")
		if err == nil && res.StatusCode == 200 {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("serve never published")
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := http.Get(base + "/tuf/metadata/1.root.json")
	if err != nil {
		t.Fatal(err)
	}
	root, _ := io.ReadAll(res.Body)
	res.Body.Close()
	rootFile := filepath.Join(dir, "1.root.json")
	if err := os.WriteFile(rootFile, root, 0o644); err != nil {
		t.Fatal(err)
	}

	out := c.must("tuf", "verify", "v1.33", "--root", rootFile)
	if !regexp.MustCompile(`^v1\.33: verified channels/v1\.33\.json, revision \d+, issued \S+Z\nanswers v1\.33\.6\+k3s2 \(tag v1\.33\.6-k3s2, digest sha256:[0-9a-f]{64}\)\nserved: v1\.33\.6\+k3s2\n$`).MatchString(out) {
		t.Errorf("tuf verify printed:\n%s", out)
	}
	if out := c.must("tuf", "verify", "v1.33", "--root", rootFile, "-o", "json"); !strings.Contains(out, `"channel": "v1.33"`) {
		t.Errorf("tuf verify -o json printed:\n%s", out)
	}
	if code, _, errs := c.run("tuf", "verify", "nope", "--root", rootFile); code == 0 || !strings.Contains(errs, "channels/nope.json is not among the signed targets") {
		t.Errorf("an unknown channel: exit %d, stderr %q", code, errs)
	}
	tampered := filepath.Join(dir, "tampered.json")
	if err := os.WriteFile(tampered, []byte(strings.Replace(string(root), `"version":1`, `"version":2`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := c.run("tuf", "verify", "v1.33", "--root", tampered); code == 0 || !strings.Contains(errs, "tuf verify v1.33: the root") {
		t.Errorf("a tampered root: exit %d, stderr %q", code, errs)
	}
	if code, _, errs := c.run("tuf", "verify", "v1.33"); code == 0 || !strings.Contains(errs, "needs --root FILE") {
		t.Errorf("no root: exit %d, stderr %q", code, errs)
	}
}
