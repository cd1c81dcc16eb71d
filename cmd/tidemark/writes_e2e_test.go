package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// e2eConfig is a k3s-like service: a channel per minor and a latest.
const e2eConfig = `
sources:
  - name: k3s
    image: docker.io/rancher/k3s-upgrade
    scheme: semver
    build: 'k3s(\d+)'
channels:
  - name: v1.33
    source: k3s
    latestRegexp: 'v1\.33\..*'
    excludeRegexp: '^[^+]+-'
  - name: latest
    source: k3s
`

var e2eTags = []string{
	"v1.32.9-k3s1", "v1.32.10-k3s1", "v1.33.4-k3s1", "v1.33.5-k3s1", "v1.33.6-k3s1", "v1.33.6-k3s2",
	"v1.34.0-rc1-k3s1", "v1.34.1-k3s1", "latest",
}

// tmcli runs tidemark commands in process with a fixed environment.
type tmcli struct {
	t    *testing.T
	env  map[string]string
	logs *testutil.LockedBuffer // serve's output, when startServe started it
}

func (c *tmcli) run(args ...string) (code int, stdout, stderr string) {
	c.t.Helper()
	var out, errb testutil.LockedBuffer
	code = Main(context.Background(), args, strings.NewReader(""), &out, &errb, func(k string) string { return c.env[k] })
	return code, out.String(), errb.String()
}

// must runs a command that has to succeed and returns its stdout.
func (c *tmcli) must(args ...string) string {
	c.t.Helper()
	code, out, errs := c.run(args...)
	if code != 0 {
		c.t.Fatalf("tidemark %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// with returns a copy of c with more environment.
func (c *tmcli) with(kv ...string) *tmcli {
	env := make(map[string]string, len(c.env)+len(kv)/2)
	for k, v := range c.env {
		env[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return &tmcli{t: c.t, env: env}
}

// startServe seeds a fresh database with e2eTags and runs `tidemark serve
// --no-index` through Main on it; it returns the CLI environment
// (DATABASE_URL, TIDEMARK_CONFIG, TIDEMARK_SERVER) once /readyz answers.
func startServe(t *testing.T) *tmcli {
	t.Helper()
	return startServeWith(t, e2eConfig)
}

// startServeWith is startServe with another configuration (same source).
// before, when given, runs once the database is seeded and before serve
// starts (with the CLI environment).
func startServeWith(t *testing.T, config string, before ...func(c *tmcli)) *tmcli {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	dbURL := storetest.URL(t)
	cfgPath := filepath.Join(t.TempDir(), "tidemark.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := &tmcli{t: t, env: map[string]string{
		"DATABASE_URL": dbURL, "TIDEMARK_CONFIG": cfgPath, "TIDEMARK_LISTEN": addr, "TIDEMARK_SERVER": "http://" + addr,
	}}
	seed(t, c.env)
	for _, b := range before {
		b(c)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	logs := &testutil.LockedBuffer{}
	c.logs = logs
	go func() {
		done <- Main(ctx, []string{"serve", "--no-index"}, strings.NewReader(""), logs, logs, func(k string) string { return c.env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d:\n%s", code, logs.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s of its context ending")
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return c
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before it was ready:\n%s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 15s:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seed indexes e2eTags as the indexer would have.
func seed(t *testing.T, env map[string]string) {
	t.Helper()
	cfg, err := config.Load(env["TIDEMARK_CONFIG"], func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	src := cfg.Sources[0].Source.Source
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		t.Fatal(err)
	}
	var tags []resolver.Tag
	digests := map[string]string{}
	for _, name := range e2eTags {
		tags = append(tags, src.Classify(name))
		digests[name] = "sha256:" + strings.Repeat("ab", 32)
	}
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: src.Name, Complete: true, Tags: tags}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetDigests(ctx, src.Name, digests); err != nil {
		t.Fatal(err)
	}
}

var tokenLine = regexp.MustCompile(`^tdm_[A-Za-z0-9_-]{43}\n$`)

// TestReleaseEngineerEndToEnd drives every client command through Main
// against `tidemark serve` running through Main on a real database.
func TestReleaseEngineerEndToEnd(t *testing.T) {
	c := startServe(t)

	promoteTok := c.must("token", "create", "--name", "release-bot", "--scope", "promote")
	if !tokenLine.MatchString(promoteTok) {
		t.Fatalf("token create printed %q, want the token alone on one line", promoteTok)
	}
	scanTok := c.must("token", "create", "--name", "scanner", "--scope", "scan")
	bot := c.with("TIDEMARK_TOKEN", strings.TrimSpace(promoteTok))

	// serve --no-index wires the store but no scanner: a scan asked here is
	// refused with the reason, after the token was checked.
	req, _ := http.NewRequest(http.MethodPost, c.env["TIDEMARK_SERVER"]+"/api/v1/sources/k3s/scan", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(scanTok))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "does not index") {
		t.Errorf("scan on serve --no-index: %d %s", res.StatusCode, body)
	}

	// Without a token, and with one lacking the scope: advice, nothing pinned.
	code, _, errs := c.run("promote", "v1.33", "v1.33.5+k3s1", "--reason", "rollback")
	if code != 1 || !strings.Contains(errs, "401: TIDEMARK_TOKEN is not set: set it to a token with scope promote") {
		t.Errorf("promote without a token: exit %d, stderr %q", code, errs)
	}
	code, _, errs = c.with("TIDEMARK_TOKEN", strings.TrimSpace(scanTok)).run("promote", "v1.33", "v1.33.5+k3s1", "--reason", "rollback")
	if code != 1 || !strings.Contains(errs, "403: the token in TIDEMARK_TOKEN lacks scope promote") {
		t.Errorf("promote with a scan token: exit %d, stderr %q", code, errs)
	}
	code, _, errs = bot.run("promote", "v1.33", "v1.34.1+k3s1", "--reason", "wrong minor")
	if code != 1 || !strings.Contains(errs, "422:") {
		t.Errorf("promote of an ineligible version: exit %d, stderr %q", code, errs)
	}

	if out := bot.must("promote", "v1.33", "v1.33.5-k3s1", "--reason", "regression in 1.33.6"); out != "v1.33: v1.33.6+k3s2 -> v1.33.5+k3s1 (pinned); clusters already on newer versions keep theirs (add --rollback to send them down)\n" {
		t.Errorf("promote printed %q", out)
	}
	// Again: nothing changes, nothing is recorded (history below holds one pin).
	if out := bot.must("promote", "v1.33", "v1.33.5+k3s1", "--reason", "again"); out != "v1.33: already pinned to v1.33.5+k3s1\n" {
		t.Errorf("promote of the pinned version printed %q", out)
	}
	if out := c.must("channels"); !regexp.MustCompile(`(?m)^v1\.33\s+k3s\s+released\s+v1\.33\.5\+k3s1\s+yes\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+-$`).MatchString(out) ||
		!strings.HasPrefix(out, "CHANNEL") {
		t.Errorf("channels table:\n%s", out)
	}
	if out := c.must("history", "v1.33"); !regexp.MustCompile(`(?m)^AT\s+ACTOR\s+ACTION\s+FROM\s+TO\s+REASON\n\S+\s+release-bot\s+pin\s+v1\.33\.6\+k3s2\s+v1\.33\.5\+k3s1\s+regression in 1\.33\.6\n$`).MatchString(out) {
		t.Errorf("history table:\n%s", out)
	}

	out := c.must("resolve", "--source", "k3s", "--current", "v1.32.9-k3s1")
	for _, want := range []string{"current version: v1.32.9+k3s1", "next step (target):\n    v1.33.6+k3s2", "v1.32.9+k3s1 (current) -> v1.33.6+k3s2 -> v1.34.1+k3s1\n", "tidemark promote --server"} {
		if !strings.Contains(out, want) {
			t.Errorf("resolve text lacks %q:\n%s", want, out)
		}
	}
	var ans struct {
		Target string   `json:"target"`
		Path   []string `json:"path"`
	}
	out = c.must("resolve", "--source", "k3s", "--current", "v1.32.9-k3s1", "-o", "json")
	if err := json.Unmarshal([]byte(out), &ans); err != nil || ans.Target != "v1.33.6+k3s2" {
		t.Errorf("resolve -o json: %v %+v from %s", err, ans, out)
	}
	// A channel names its source: --source is not needed with --channel.
	out = c.must("resolve", "--channel", "latest", "--current", "v1.32.9-k3s1", "-o", "json")
	if err := json.Unmarshal([]byte(out), &ans); err != nil || ans.Target != "v1.33.6+k3s2" {
		t.Errorf("resolve --channel -o json: %v %+v from %s", err, ans, out)
	}

	// Block the pinned version: the channel stops answering rather than
	// falling back; unblock and it answers again.
	if out := bot.must("block", "k3s", "v1.33.5+k3s1", "--reason", "bad image"); out != "k3s v1.33.5+k3s1: blocked\n" {
		t.Errorf("block printed %q", out)
	}
	if out := c.must("channels"); !regexp.MustCompile(`(?m)^v1\.33\s+k3s\s+released\s+-\s+yes`).MatchString(out) {
		t.Errorf("channels with the pinned version blocked:\n%s", out)
	}
	if out := bot.must("unblock", "k3s", "v1.33.5-k3s1", "--reason", "rebuilt"); out != "k3s v1.33.5+k3s1: unblocked\n" {
		t.Errorf("unblock printed %q", out)
	}
	if out := bot.must("unpin", "v1.33", "--reason", "fixed"); out != "v1.33: following its stream, now v1.33.6+k3s2\n" {
		t.Errorf("unpin printed %q", out)
	}
	// The channel's history has its pins and the blocks of its source's
	// versions, newest first.
	var events []struct{ Action string }
	if err := json.Unmarshal([]byte(c.must("history", "v1.33", "-o", "json")), &events); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, ev := range events {
		actions = append(actions, ev.Action)
	}
	if got, want := strings.Join(actions, ","), "unpin,unblock,block,pin"; got != want {
		t.Errorf("history -o json after unpin: actions %s, want %s", got, want)
	}

	// The token list shows names and use, never a secret.
	out = c.must("token", "list")
	if !regexp.MustCompile(`(?m)^NAME\s+SCOPES\s+CHANNELS\s+CREATED\s+LAST USED\s+REVOKED\n`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^release-bot\s+promote\s+\(all\)\s+\d{4}-\S+\s+\d{4}-\S+\s+-$`).MatchString(out) ||
		strings.Contains(out, "tdm_") {
		t.Errorf("token list:\n%s", out)
	}
	c.must("token", "revoke", "release-bot")
	code, _, errs = bot.run("unpin", "v1.33")
	if code != 1 || !regexp.MustCompile(`^tidemark: 401: .*unknown or revoked token: set TIDEMARK_TOKEN to a token with scope promote`).MatchString(errs) {
		t.Errorf("unpin with a revoked token: exit %d, stderr %q", code, errs)
	}
	if out := c.must("token", "list"); !regexp.MustCompile(`(?m)^release-bot\s+promote\s+\S+\s+\S+\s+\d{4}-`).MatchString(out) {
		t.Errorf("token list after revoke:\n%s", out)
	}
}
