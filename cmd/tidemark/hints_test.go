package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestServeHintsWorkAsPasted: serve --hints (make run) prints, once it
// listens, its URL, a token command for its own database that works, and
// the make demo way out.
func TestServeHintsWorkAsPasted(t *testing.T) {
	dbURL := storetest.URL(t)
	cfgPath := filepath.Join(t.TempDir(), "tidemark.yaml")
	if err := os.WriteFile(cfgPath, []byte(e2eConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	tokenCmd := regexp.MustCompile(`(?m)^    export TIDEMARK_TOKEN=\$\(DATABASE_URL='([^']+)' (\S+) (token create --name dev-\d+ --scope promote)\)$`)
	// The port is free when picked, but another test's outgoing connection
	// may take it before serve binds it: then serve says the address is in
	// use and exits, and the test picks again (at most three times).
	var port string
	var logs *testutil.LockedBuffer
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(ln.Addr().String())
		ln.Close()
		env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_LISTEN": ":" + port}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		logs = &testutil.LockedBuffer{}
		go func() {
			done <- Main(ctx, []string{"serve", "--no-index", "--hints", "--config", cfgPath}, strings.NewReader(""), logs, logs, func(k string) string { return env[k] })
		}()
		exited := false
		deadline := time.Now().Add(15 * time.Second)
		for !tokenCmd.MatchString(logs.String()) && !exited {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("no token command in serve's output:\n%s", logs.String())
			}
			select {
			case <-done:
				exited = true
			case <-time.After(20 * time.Millisecond):
			}
		}
		if exited {
			cancel()
			if try < 2 && strings.Contains(logs.String(), "is in use") {
				continue
			}
			t.Fatalf("serve exited before printing its hints:\n%s", logs.String())
		}
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Error("serve did not stop")
			}
		})
		break
	}
	out := logs.String()
	for _, want := range []string{
		"tidemark: serving at http://localhost:" + port + "\n",
		"    export TIDEMARK_SERVER=http://localhost:" + port + "\n",
		"sources --server http://localhost:" + port + " shows each source's last scan",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hints lack %q:\n%s", want, out)
		}
	}
	// A custom configuration's channels are not make demo's.
	if strings.Contains(out, "make demo serves the same channels") {
		t.Errorf("hints for a custom configuration point at make demo:\n%s", out)
	}
	// The command as printed, against the database it names.
	m := tokenCmd.FindStringSubmatch(out)
	if m[1] != dbURL {
		t.Errorf("token command names database %q, serve uses %q", m[1], dbURL)
	}
	c := &tmcli{t: t, env: map[string]string{"DATABASE_URL": m[1]}}
	tok := c.must(strings.Fields(m[3])...)
	if !tokenLine.MatchString(tok) {
		t.Errorf("token create printed %q", tok)
	}
	c = c.with("TIDEMARK_SERVER", "http://localhost:"+port)
	if out := c.must("channels"); !strings.Contains(out, "v1.33") {
		t.Errorf("channels against the hinted URL:\n%s", out)
	}
}
