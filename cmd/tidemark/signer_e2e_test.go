package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// replica is one `tidemark serve --no-index` run in process by a test.
type replica struct {
	*tmcli
	base string
	stop func() // ends serve and waits for it
}

// startReplica runs serve on db with config (a file of its own) until
// stop or the test's end, and returns once it is ready.
func startReplica(t *testing.T, db, config string) *replica {
	t.Helper()
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
	c := &tmcli{t: t, env: map[string]string{"DATABASE_URL": db, "TIDEMARK_CONFIG": cfgPath, "TIDEMARK_LISTEN": addr,
		"TIDEMARK_SERVER": "http://" + addr}, logs: &testutil.LockedBuffer{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--no-index"}, strings.NewReader(""), c.logs, c.logs, func(k string) string { return c.env[k] })
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s of its context ending")
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(15 * time.Second)
	for {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return &replica{tmcli: c, base: "http://" + addr, stop: stop}
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before it was ready:\n%s", code, c.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready after 15s:\n%s", c.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// signedTarget is channel's published revision and answer, as stored.
func signedTarget(t *testing.T, conn *pgx.Conn, channel string) (int64, string) {
	t.Helper()
	var rev int64
	var content string
	err := conn.QueryRow(context.Background(), `select revision, content from tuf_channels where channel = $1`, channel).Scan(&rev, &content)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	var c struct {
		Answer *struct{ Version string } `json:"a"`
	}
	_ = json.Unmarshal([]byte(content), &c)
	if c.Answer == nil {
		return rev, ""
	}
	return rev, c.Answer.Version
}

func status(t *testing.T, base, token string) openapi.Status {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var s openapi.Status
	if res.StatusCode != http.StatusOK || json.Unmarshal(b, &s) != nil {
		t.Fatalf("GET /api/v1/status: %d %s", res.StatusCode, b)
	}
	return s
}

func metric(t *testing.T, base, name string) string {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// TestOneSignerWhileReplicasDisagree: two replicas on one database, one
// with another latest: for channel v1.33. Only the one holding the
// signer lock publishes, so while both run (and changes kick both) the
// signed answer of v1.33 stays its; the other says its configuration
// differs (WARN naming both digests, tidemark_config_in_agreement 0,
// /api/v1/status). When the holder stops, the other takes the lock and
// the signed answer changes once.
func TestOneSignerWhileReplicasDisagree(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	dir := t.TempDir()
	rootKey, onlineKey := filepath.Join(dir, "root.pem"), filepath.Join(dir, "online.pem")
	tuf := "tuf:\n  online_key_file: " + onlineKey + "\n"
	db := storetest.URL(t)
	seedCfg := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(seedCfg, []byte(e2eConfig+tuf), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := &tmcli{t: t, env: map[string]string{"DATABASE_URL": db, "TIDEMARK_CONFIG": seedCfg}}
	seed(t, admin.env)
	admin.must("tuf", "init", "--root-key", rootKey, "--online-key", onlineKey)
	token := strings.TrimSpace(admin.must("token", "create", "--name", "ops", "--scope", "admin"))
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	a := startReplica(t, db, e2eConfig+tuf)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, v := signedTarget(t, conn, "v1.33"); v == "v1.33.6+k3s2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A never signed v1.33:\n%s", a.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	other := strings.Replace(e2eConfig, "    latestRegexp: 'v1\\.33\\..*'\n", "    latestRegexp: 'v1\\.33\\..*'\n    latest: v1.33.5+k3s1\n", 1)
	if other == e2eConfig {
		t.Fatal("the second configuration is the first")
	}
	b := startReplica(t, db, other+tuf)
	rev, _ := signedTarget(t, conn, "v1.33")

	// Changes kick both replicas' signing loops: pins of another channel
	// through each in turn.
	bot := admin.with("TIDEMARK_TOKEN", token)
	for i, r := range []*replica{a, b, a, b} {
		v := []string{"v1.33.4+k3s1", "v1.33.5+k3s1"}[i%2]
		bot.with("TIDEMARK_SERVER", r.base).must("promote", "latest", v, "--reason", "kick")
		time.Sleep(1500 * time.Millisecond) // a publication is coalesced over up to a second
		if r2, v := signedTarget(t, conn, "v1.33"); r2 != rev || v != "v1.33.6+k3s2" {
			t.Fatalf("after change %d the signed v1.33 is %s at revision %d, want A's v1.33.6+k3s2 at %d: two signers\nB:\n%s", i, v, r2, rev, b.logs.String())
		}
	}
	// B, which does not sign, names the signer's revision in its channel
	// objects.
	for deadline := time.Now().Add(3 * time.Second); ; {
		res, err := http.Get(b.base + "/api/v1/channels/v1.33")
		if err != nil {
			t.Fatal(err)
		}
		var ch struct {
			TUF struct{ Revision int64 } `json:"tuf"`
		}
		_ = json.NewDecoder(res.Body).Decode(&ch)
		res.Body.Close()
		if ch.TUF.Revision == rev {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B's channel object names revision %d, want the signer's %d", ch.TUF.Revision, rev)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sa, sb := status(t, a.base, token), status(t, b.base, token)
	if sa.Signer == nil || !sa.Signer.Holding || sb.Signer == nil || sb.Signer.Holding {
		t.Errorf("signers: A %+v, B %+v, want A alone", sa.Signer, sb.Signer)
	}
	if len(sa.Config.Digest) != 64 || sa.Config.Digest == sb.Config.Digest {
		t.Fatalf("digests A %q B %q: want two different SHA-256s", sa.Config.Digest, sb.Config.Digest)
	}
	if sb.Config.Published == nil || *sb.Config.Published != sa.Config.Digest || sb.Config.InAgreement == nil || *sb.Config.InAgreement {
		t.Errorf("B's status config %+v, want published = A's digest, not in agreement", sb.Config)
	}
	if sa.Config.InAgreement == nil || !*sa.Config.InAgreement {
		t.Errorf("A's status config %+v, want in agreement", sa.Config)
	}
	if m := metric(t, b.base, "tidemark_config_in_agreement"); m != "0" {
		t.Errorf("B's tidemark_config_in_agreement %q, want 0", m)
	}
	if m := metric(t, a.base, "tidemark_config_in_agreement"); m != "1" {
		t.Errorf("A's tidemark_config_in_agreement %q, want 1", m)
	}
	if logs := b.logs.String(); !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, sb.Config.Digest) || !strings.Contains(logs, sa.Config.Digest) {
		t.Errorf("B logged no WARN naming both digests:\n%s", logs)
	}

	// B's file takes A's channels and a SIGHUP applies them: B agrees
	// within a second or two, without a new publication.
	if err := os.WriteFile(b.env["TIDEMARK_CONFIG"], []byte(e2eConfig+tuf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); metric(t, b.base, "tidemark_config_in_agreement") != "1"; {
		if time.Now().After(deadline) {
			t.Fatalf("B does not agree within 5 s of applying A's channels:\n%s", b.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := status(t, b.base, token); s.Config.Digest != sa.Config.Digest || s.Config.InAgreement == nil || !*s.Config.InAgreement {
		t.Errorf("B's status after SIGHUP %+v, want A's digest, in agreement", s.Config)
	}
	// Back to its own latest: for the change of hands below.
	if err := os.WriteFile(b.env["TIDEMARK_CONFIG"], []byte(other+tuf), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); metric(t, b.base, "tidemark_config_in_agreement") != "0"; {
		if time.Now().After(deadline) {
			t.Fatalf("B agrees still 5 s after taking its own latest: again:\n%s", b.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The lock changes hands (B looks every 5 s; no change needed to
	// kick it): the signed answer changes, once.
	a.stop()
	deadline = time.Now().Add(10 * time.Second)
	for {
		r2, v := signedTarget(t, conn, "v1.33")
		if v == "v1.33.5+k3s1" {
			if r2 != rev+1 {
				t.Errorf("B's first publication is revision %d, want %d", r2, rev+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B did not take over signing within 10s of A stopping:\n%s", b.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	if err := conn.QueryRow(context.Background(), `select count(distinct config_digest) from tuf_publications`).Scan(&n); err != nil || n != 2 {
		t.Errorf("publications carry %d digests (%v), want A's then B's", n, err)
	}
}

// TestASignerThatCannotSignStepsAside: a replica whose online key is not
// the one the newest root names does not take the signer lock and says
// exactly that (never "database connection lost"), serving the newest
// published metadata; after tuf rotate-online the holder, still on the
// old key, gives the lock up at once, and a replica with the new key
// takes it and publishes the pending root.
func TestASignerThatCannotSignStepsAside(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	dir := t.TempDir()
	rootKey, onlineKey := filepath.Join(dir, "root.pem"), filepath.Join(dir, "online.pem")
	withKey := func(k string) string { return e2eConfig + "tuf:\n  online_key_file: " + k + "\n" }
	db := storetest.URL(t)
	seedCfg := filepath.Join(dir, "seed.yaml")
	if err := os.WriteFile(seedCfg, []byte(withKey(onlineKey)), 0o600); err != nil {
		t.Fatal(err)
	}
	admin := &tmcli{t: t, env: map[string]string{"DATABASE_URL": db, "TIDEMARK_CONFIG": seedCfg}}
	seed(t, admin.env)
	admin.must("tuf", "init", "--root-key", rootKey, "--online-key", onlineKey)
	token := strings.TrimSpace(admin.must("token", "create", "--name", "ops", "--scope", "admin"))
	// Another online key, named by no root.
	stray := filepath.Join(dir, "stray.pem")
	other := &tmcli{t: t, env: map[string]string{"DATABASE_URL": storetest.URL(t), "TIDEMARK_CONFIG": seedCfg}}
	other.must("migrate")
	other.must("tuf", "init", "--root-key", filepath.Join(dir, "stray-root.pem"), "--online-key", stray)

	a := startReplica(t, db, withKey(onlineKey))
	b := startReplica(t, db, withKey(stray))
	waitFor := func(what string, ok func() bool, logs *testutil.LockedBuffer) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s:\n%s", what, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	get := func(u string) (int, string) {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	waitFor("B says why it does not sign", func() bool { return strings.Contains(b.logs.String(), "not taking the signer lock") }, b.logs)
	logs := b.logs.String()
	if !strings.Contains(logs, "the online key "+stray) || !strings.Contains(logs, "is not the one root version 1 names for targets") ||
		strings.Contains(logs, "connection lost") {
		t.Errorf("B's log does not say exactly what is wrong:\n%s", logs)
	}
	waitFor("A signs", func() bool { code, _ := get(a.base + "/tuf/metadata/timestamp.json"); return code == http.StatusOK }, a.logs)
	if _, ta := get(a.base + "/tuf/metadata/timestamp.json"); ta != func() string { _, tb := get(b.base + "/tuf/metadata/timestamp.json"); return tb }() {
		t.Error("B does not serve the timestamp A published")
	}
	if m := metric(t, b.base, "tidemark_tuf_signer"); m != "0" {
		t.Errorf("B's tidemark_tuf_signer %q, want 0", m)
	}
	if m := metric(t, a.base, "tidemark_tuf_signer"); m != "1" {
		t.Errorf("A's tidemark_tuf_signer %q, want 1", m)
	}

	// A new online key: root 2 is pending, naming it. A, on the old key,
	// gives the lock up at its next pass (a change kicks it).
	online2 := filepath.Join(dir, "online2.pem")
	admin.must("tuf", "rotate-online", "--root-key", rootKey, "--online-key", online2)
	admin.with("TIDEMARK_TOKEN", token, "TIDEMARK_SERVER", a.base).must("promote", "latest", "v1.33.4+k3s1", "--reason", "kick")
	waitFor("A releases the lock", func() bool { return metric(t, a.base, "tidemark_tuf_signer") == "0" }, a.logs)
	if logs := a.logs.String(); !strings.Contains(logs, "released the signer lock") || !strings.Contains(logs, "discard-pending") {
		t.Errorf("A's log does not say it released the lock and what to run:\n%s", logs)
	}
	if code, _ := get(a.base + "/tuf/metadata/2.root.json"); code != http.StatusNotFound {
		t.Errorf("the pending root is served before a replica signs with its key: %d", code)
	}
	c := startReplica(t, db, withKey(online2))
	waitFor("C publishes root 2", func() bool { code, _ := get(c.base + "/tuf/metadata/2.root.json"); return code == http.StatusOK }, c.logs)
	if m := metric(t, c.base, "tidemark_tuf_signer"); m != "1" {
		t.Errorf("C's tidemark_tuf_signer %q, want 1", m)
	}
}
