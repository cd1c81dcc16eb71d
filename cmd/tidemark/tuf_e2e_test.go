package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata/config"
	"github.com/theupdateframework/go-tuf/v2/metadata/updater"

	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// TestSignedAnswersThroughServe: tuf init makes the keys and the root;
// serve publishes every channel's answer; go-tuf's updater, trusting only
// 1.root.json fetched once, verifies a channel's target; after a pin it
// sees the new answer at a higher revision within a second, and the
// channel object names the same revision.
func TestSignedAnswersThroughServe(t *testing.T) {
	dir := t.TempDir()
	rootKey, onlineKey := filepath.Join(dir, "root.pem"), filepath.Join(dir, "online.pem")
	cfg := e2eConfig + "tuf:\n  online_key_file: " + onlineKey + "\n"
	c := startServeWith(t, cfg, func(c *tmcli) {
		c.must("tuf", "init", "--root-key", rootKey, "--online-key", onlineKey)
		if code, _, errs := c.run("tuf", "init", "--root-key", filepath.Join(dir, "r2.pem"), "--online-key", filepath.Join(dir, "o2.pem")); code == 0 || !strings.Contains(errs, "exists already") {
			t.Errorf("a second tuf init: exit %d %q, want refused", code, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, "r2.pem")); err == nil {
			t.Error("a refused tuf init left a key file behind")
		}
	})
	base := c.env["TIDEMARK_SERVER"]
	res, err := http.Get(base + "/tuf/metadata/1.root.json")
	if err != nil {
		t.Fatal(err)
	}
	var root json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&root); err != nil || res.StatusCode != 200 {
		t.Fatalf("1.root.json: %d %v", res.StatusCode, err)
	}
	res.Body.Close()
	if res, _ := http.Get(base + "/tuf/metadata/2.root.json"); res.StatusCode != http.StatusNotFound {
		t.Errorf("the next root: %d, want 404", res.StatusCode)
	}
	cache := t.TempDir()
	fetch := func() signed.Answer {
		t.Helper()
		cfg, err := config.New(base+"/tuf/metadata", root)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RemoteTargetsURL = base + "/tuf/targets"
		cfg.LocalMetadataDir, cfg.LocalTargetsDir = cache, t.TempDir()
		up, err := updater.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Refresh(); err != nil {
			t.Fatalf("refresh: %v", err)
		}
		ti, err := up.GetTargetInfo("channels/v1.33.json")
		if err != nil {
			t.Fatalf("target info: %v", err)
		}
		_, b, err := up.DownloadTarget(ti, filepath.Join(t.TempDir(), "t.json"), "")
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		var a signed.Answer
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	deadline := time.Now().Add(10 * time.Second)
	var first signed.Answer
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
	first = fetch()
	if first.Answer == nil || first.Answer.Version != "v1.33.6+k3s2" || first.Revision < 1 {
		t.Fatalf("v1.33 through go-tuf: %+v", first)
	}
	bot := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "release-bot", "--scope", "promote")))
	revision := func() int64 {
		res, err := http.Get(base + "/api/v1/channels/v1.33")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var ch struct {
			TUF struct{ Revision int64 } `json:"tuf"`
		}
		_ = json.NewDecoder(res.Body).Decode(&ch)
		return ch.TUF.Revision
	}
	// A cluster is directed to v1.33.6+k3s2 before the pin below.
	noRedirects := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	askAs := func(id, reported string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/v1.33", nil)
		req.Header.Set("X-SUC-Cluster-ID", id)
		req.Header.Set("X-SUC-Latest-Version", reported)
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	askAs("edge-7", "v1.33.5-k3s1")
	bot.must("promote", "v1.33", "v1.33.5+k3s1", "--reason", "signed")
	pinned := time.Now()
	for revision() <= first.Revision && time.Since(pinned) < 5*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(pinned); took > time.Second {
		t.Errorf("the pin was published after %s, want within 1 s", took)
	} else {
		t.Logf("the pin was published %s after it was made", took.Round(time.Millisecond))
	}
	for {
		a := fetch()
		if a.Answer != nil && a.Answer.Version == "v1.33.5+k3s1" && a.Revision > first.Revision {
			var ch struct {
				TUF struct {
					Target   string `json:"target"`
					Revision int64  `json:"revision"`
				} `json:"tuf"`
			}
			res, err := http.Get(base + "/api/v1/channels/v1.33")
			if err != nil {
				t.Fatal(err)
			}
			_ = json.NewDecoder(res.Body).Decode(&ch)
			res.Body.Close()
			if ch.TUF.Target != "channels/v1.33.json" || ch.TUF.Revision != a.Revision {
				t.Errorf("channel object tuf %+v, want channels/v1.33.json at revision %d", ch.TUF, a.Revision)
			}
			// tuf-js, npm's TUF client, verifies the same target.
			if js := tufjsFetch(t, base, root, "channels/v1.33.json"); js.Answer == nil || js.Answer.Version != "v1.33.5+k3s1" || js.Revision != a.Revision {
				t.Errorf("tuf-js: %+v, want v1.33.5+k3s1 at revision %d as go-tuf", js, a.Revision)
			}
			// A new root key: the client follows to root 2 and still verifies.
			c.must("tuf", "rotate-root", "--root-key", rootKey, "--new-root-key", filepath.Join(dir, "root2.pem"))
			if b := fetch(); b.Answer == nil || b.Answer.Version != "v1.33.5+k3s1" {
				t.Errorf("after tuf rotate-root: %+v", b)
			}
			if res, _ := http.Get(base + "/tuf/metadata/2.root.json"); res.StatusCode != http.StatusOK {
				t.Errorf("2.root.json after rotate-root: %d", res.StatusCode)
			}
			// A new online key waits for serve to run with it.
			c.must("tuf", "rotate-online", "--root-key", filepath.Join(dir, "root2.pem"), "--online-key", filepath.Join(dir, "online2.pem"))
			if res, _ := http.Get(base + "/tuf/metadata/3.root.json"); res.StatusCode != http.StatusNotFound {
				t.Errorf("a pending root is served: %d", res.StatusCode)
			}
			// The file names the new key; a SIGHUP applies it without a
			// restart: root 3 is served and the client verifies with it.
			next := e2eConfig + "tuf:\n  online_key_file: " + filepath.Join(dir, "online2.pem") + "\n"
			if err := os.WriteFile(c.env["TIDEMARK_CONFIG"], []byte(next), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				res, err := http.Get(base + "/tuf/metadata/3.root.json")
				if err == nil {
					res.Body.Close()
					if res.StatusCode == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("3.root.json not served within 5s of SIGHUP:\n%s", c.logs.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if b := fetch(); b.Answer == nil || b.Answer.Version != "v1.33.5+k3s1" {
				t.Errorf("after rotate-online and SIGHUP: %+v", b)
			}
			if logs := c.logs.String(); strings.Contains(logs, "only a restart applies") {
				t.Errorf("a new online key was reported as needing a restart:\n%s", logs)
			}
			// edge-7, directed to v1.33.6+k3s2 before the pin, runs it now
			// and is held there (the pin is older and not a rollback): the
			// served set keeps v1.33.6+k3s2 from the fleet record alone (its
			// last directed answer), no snapshot change: signed within 5 s.
			askAs("edge-7", "v1.33.6-k3s2")
			asked := time.Now()
			for {
				b := fetch()
				if slices.ContainsFunc(b.Served, func(v signed.Version) bool { return v.Version == "v1.33.6+k3s2" }) {
					t.Logf("a fleet record's served-set change was signed %s after the request", time.Since(asked).Round(time.Millisecond))
					break
				}
				if time.Since(asked) > 5*time.Second {
					t.Fatalf("5 s after a cluster was held on v1.33.6+k3s2 the signed served set is %+v", b.Served)
				}
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
		if time.Since(pinned) > 5*time.Second {
			t.Fatalf("after a pin the TUF client still sees %+v", a)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tufjsFetch verifies target through tuf-js (npm; scripts/test-deps
// installs it into bin/tufjs) trusting root, and returns its answer.
func tufjsFetch(t *testing.T, base string, root []byte, target string) signed.Answer {
	t.Helper()
	mods, err := filepath.Abs("../../bin/tufjs/node_modules")
	if err == nil {
		_, err = os.Stat(filepath.Join(mods, "tuf-js"))
	}
	if err != nil {
		t.Fatalf("tuf-js is not installed (run scripts/test-deps; make test does): %v", err)
	}
	meta := t.TempDir()
	if err := os.WriteFile(filepath.Join(meta, "root.json"), root, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "testdata/tufjs-fetch.cjs", base+"/tuf/metadata", base+"/tuf/targets", meta, t.TempDir(), target)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tuf-js: %v\n%s", err, stderr.String())
	}
	var a signed.Answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("tuf-js printed %q: %v", out, err)
	}
	return a
}
