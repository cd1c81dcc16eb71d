package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// processEnv is the environment of a serve process: a fresh database,
// seeded, and the e2e configuration.
func processEnv(t *testing.T) map[string]string {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	cfgPath := filepath.Join(t.TempDir(), "tidemark.yaml")
	if err := os.WriteFile(cfgPath, []byte(e2eConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "TIDEMARK_CONFIG": cfgPath}
	seed(t, env)
	return env
}

// startProcess runs `tidemark serve --no-index` as a process of its own
// (the test binary re-executed, see TestMain) and waits until it is ready.
func startProcess(t *testing.T, env map[string]string) (*exec.Cmd, string, *testutil.LockedBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "serve", "--no-index")
	cmd.Env = append(os.Environ(), reexecEnv+"=1", "TIDEMARK_LISTEN="+addr)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &testutil.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; {
		if res, err := http.Get("http://" + addr + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return cmd, "http://" + addr, logs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve on %s not ready:\n%s", addr, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScheduledChangeSurvivesAKill9: a change scheduled on replica A,
// which is killed with SIGKILL one second before the change's time, is
// applied by replica B within 5 s of its time, once.
func TestScheduledChangeSurvivesAKill9(t *testing.T) {
	env := processEnv(t)
	c := &tmcli{t: t, env: env}
	tok := strings.TrimSpace(c.must("token", "create", "--name", "release-bot", "--scope", "promote"))

	a, baseA, _ := startProcess(t, env)
	_, baseB, _ := startProcess(t, env)

	at := time.Now().Add(3 * time.Second).UTC()
	req, _ := http.NewRequest(http.MethodPost, baseA+"/api/v1/channels/v1.33/changes",
		strings.NewReader(fmt.Sprintf(`{"action":"pin","version":"v1.33.5+k3s1","reason":"night","at":%q}`, at.Format(time.RFC3339Nano))))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("schedule: %d %s", res.StatusCode, body)
	}
	time.Sleep(time.Until(at.Add(-time.Second)))
	if err := a.Process.Kill(); err != nil { // SIGKILL: no shutdown at all
		t.Fatal(err)
	}
	_ = a.Wait()
	var served string
	for deadline := at.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(baseB + "/api/v1/channels/v1.33")
		if err != nil {
			t.Fatal(err)
		}
		var ch struct{ Version string }
		_ = json.NewDecoder(res.Body).Decode(&ch)
		res.Body.Close()
		if served = ch.Version; served == "v1.33.5+k3s1" {
			break
		}
	}
	late := time.Since(at)
	t.Logf("replica A killed 1 s before; replica B served the change %s after its time", late.Round(time.Millisecond))
	if served != "v1.33.5+k3s1" || late > 5*time.Second {
		t.Fatalf("replica B serves %s %s after the change's time, want v1.33.5+k3s1 within 5s", served, late)
	}
	st, err := store.Open(context.Background(), env["DATABASE_URL"], nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events, err := st.History(context.Background(), "v1.33")
	if err != nil {
		t.Fatal(err)
	}
	pins := 0
	for _, e := range events {
		if e.Action == "pin" {
			pins++
		}
	}
	if pins != 1 {
		t.Errorf("%d pins recorded, want 1", pins)
	}
}
