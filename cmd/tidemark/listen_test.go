package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestAPortInUseIsSaidFirst: serve and demo with a port another process
// holds fail at once, before any database or registry work, saying that
// another Tidemark may be running and how to choose another port.
func TestAPortInUseIsSaidFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, args := range [][]string{{"serve", "--config", "../../deploy/examples/tidemark.yaml"}, {"demo"}} {
		c := &tmcli{t: t, env: map[string]string{
			// No database listens there: with the port checked first, the
			// error is the port's, not the database's.
			"DATABASE_URL":    "postgres://nobody@127.0.0.1:1/none",
			"TIDEMARK_LISTEN": addr,
		}}
		start := time.Now()
		code, _, errs := c.run(args...)
		took := time.Since(start)
		if code == 0 || !strings.Contains(errs, "in use") || !strings.Contains(errs, "TIDEMARK_LISTEN") || !strings.Contains(errs, "another Tidemark") {
			t.Errorf("%s on a taken port: exit %d, stderr %q", args[0], code, errs)
		}
		if took > 2*time.Second {
			t.Errorf("%s took %s to say the port is taken, want it said first", args[0], took)
		}
	}
}

// TestServeListenFlagAndMakeRunCheckThePortFirst: serve takes --listen (the
// advice names it), and make run says a taken port before Postgres starts.
func TestServeListenFlagAndMakeRunCheckThePortFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	c := &tmcli{t: t, env: map[string]string{"DATABASE_URL": "postgres://nobody@127.0.0.1:1/none"}}
	code, _, errs := c.run("serve", "--config", "../../deploy/examples/tidemark.yaml", "--listen", addr)
	if code == 0 || !strings.Contains(errs, "listen "+addr+": the address is in use") {
		t.Errorf("serve --listen on a taken port: exit %d, stderr %q", code, errs)
	}

	// make run with this test binary as bin/tidemark (it runs Main when
	// reexecEnv is set) and no database of its own: with the port checked
	// first, with-pg never starts a cluster.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "TIDEMARK_LISTEN=") {
			env = append(env, kv)
		}
	}
	cmd := exec.Command("make", "-s", "-o", "build", "run", "BIN="+os.Args[0], "LISTEN="+addr)
	cmd.Dir = "../.."
	cmd.Env = append(env, reexecEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the address is in use") || strings.Contains(string(out), "with-pg:") {
		t.Errorf("make run on a taken port: %v\n%s", err, out)
	}
}
