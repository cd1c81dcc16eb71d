package main

import (
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/tidemark-dev/tidemark/internal/tufpub"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestARotationCanBeUndone: while rotate-online's root is pending, a
// second rotate-online and a rotate-root are refused before they create a
// key file and say how to go on; discard-pending (with the root key, not
// another) drops it, nothing is served for it, and rotate-root then
// replaces the root key, served at once (issue 53 item 3).
func TestARotationCanBeUndone(t *testing.T) {
	dir := t.TempDir()
	key := func(name string) string { return filepath.Join(dir, name) }
	cfg := e2eConfig + "tuf:\n  online_key_file: " + key("online.pem") + "\n"
	c := startServeWith(t, cfg, func(c *tmcli) {
		c.must("tuf", "init", "--root-key", key("root.pem"), "--online-key", key("online.pem"))
	})
	base := c.env["TIDEMARK_SERVER"]
	status := func(path string) int {
		t.Helper()
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	absent := func(name string) {
		t.Helper()
		if _, err := os.Stat(key(name)); err == nil {
			t.Errorf("a refused command created %s", name)
		}
	}

	c.must("tuf", "rotate-online", "--root-key", key("root.pem"), "--online-key", key("online2.pem"))
	if code := status("/tuf/metadata/2.root.json"); code != http.StatusNotFound {
		t.Fatalf("the pending root is served: %d", code)
	}
	for _, args := range [][]string{
		{"rotate-online", "--root-key", key("root.pem"), "--online-key", key("online3.pem")},
		{"rotate-root", "--root-key", key("root.pem"), "--new-root-key", key("root2.pem")},
	} {
		code, _, errs := c.run(append([]string{"tuf"}, args...)...)
		if code == 0 || !strings.Contains(errs, "a root is pending: version 2") || !strings.Contains(errs, "tidemark tuf discard-pending --root-key") {
			t.Errorf("tuf %s while root 2 is pending: exit %d %q, want refused naming root 2 and discard-pending", args[0], code, errs)
		}
	}
	absent("online3.pem")
	absent("root2.pem")

	if code, _, errs := c.run("tuf", "discard-pending", "--root-key", key("online.pem")); code == 0 || !strings.Contains(errs, "not the key root version 1 names") {
		t.Errorf("discard-pending with the online key: exit %d %q, want refused", code, errs)
	}
	if code, _, errs := c.run("tuf", "discard-pending", "--root-key", key("root.pem")); code != 0 || !strings.Contains(errs, "root version 2 dropped") {
		t.Fatalf("discard-pending: exit %d %q", code, errs)
	}
	if code, _, errs := c.run("tuf", "discard-pending", "--root-key", key("root.pem")); code == 0 || !strings.Contains(errs, "no root is pending") {
		t.Errorf("a second discard-pending: exit %d %q, want no root is pending", code, errs)
	}

	// The compromised-root case: a new root key, served at once, still
	// naming the online key serve signs with.
	c.must("tuf", "rotate-root", "--root-key", key("root.pem"), "--new-root-key", key("root2.pem"))
	res, err := http.Get(base + "/tuf/metadata/2.root.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var root struct {
		Signed struct {
			Roles map[string]struct {
				KeyIDs []string `json:"keyids"`
			} `json:"roles"`
		} `json:"signed"`
	}
	if err := json.NewDecoder(res.Body).Decode(&root); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("2.root.json after discard-pending and rotate-root: %d %v", res.StatusCode, err)
	}
	if got, want := root.Signed.Roles["root"].KeyIDs, keyID(t, key("root2.pem")); len(got) != 1 || got[0] != want {
		t.Errorf("root 2's root keys %v, want [%s]", got, want)
	}
	if got, want := root.Signed.Roles["timestamp"].KeyIDs, keyID(t, key("online.pem")); len(got) != 1 || got[0] != want {
		t.Errorf("root 2's timestamp keys %v, want the online key serve runs with [%s]", got, want)
	}
}

// TestKeysAndTokensWaitForMigrate: on a database not yet migrated, tuf
// init, token create and token list say to run tidemark migrate and
// create no key file; after migrate the same tuf init succeeds (issue 54
// item 3).
func TestKeysAndTokensWaitForMigrate(t *testing.T) {
	dir := t.TempDir()
	c := &tmcli{t: t, env: map[string]string{"DATABASE_URL": storetest.EmptyURL(t)}}
	initArgs := []string{"tuf", "init", "--root-key", filepath.Join(dir, "root.pem"), "--online-key", filepath.Join(dir, "online.pem")}
	for _, args := range [][]string{initArgs, {"token", "create", "--name", "ci", "--scope", "read"}, {"token", "list"}} {
		code, _, errs := c.run(args...)
		if code == 0 || !strings.Contains(errs, "not migrated") || !strings.Contains(errs, "run tidemark migrate") || strings.Contains(errs, "SQLSTATE") {
			t.Errorf("tidemark %s before migrate: exit %d %q, want one line saying to run tidemark migrate", strings.Join(args[:2], " "), code, errs)
		}
	}
	for _, f := range []string{"root.pem", "online.pem"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("tuf init before migrate created %s", f)
		}
	}
	c.must("migrate")
	c.must(initArgs...)
}

func keyID(t *testing.T, path string) string {
	t.Helper()
	k, err := tufpub.LoadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mk, err := metadata.KeyFromPublicKey(k.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	id, err := mk.ID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
