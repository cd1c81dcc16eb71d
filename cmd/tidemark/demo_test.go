package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestDemoServesSeededChannels runs `tidemark demo` through Main, as make demo
// does, and checks the answers a person is told to try in the README.
func TestDemoServesSeededChannels(t *testing.T) {
	dbURL := storetest.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	stderr := &testutil.LockedBuffer{}
	go func() {
		getenv := func(k string) string {
			if k == "DATABASE_URL" {
				return dbURL
			}
			return ""
		}
		done <- Main(ctx, []string{"demo", "--listen", addr}, strings.NewReader(""), io.Discard, stderr, getenv)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("demo exited %d", code)
			}
		case <-time.After(20 * time.Second):
			t.Error("demo did not stop within 20s of its context ending")
		}
	})

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + addr
	// The first scan runs in the background; poll until the channels answer.
	want := map[string]string{
		"stable":   "https://github.com/k3s-io/k3s/releases/tag/v1.33.6+k3s1",
		"v1.33":    base + "/api/v1/sources/k3s-upgrade/versions/v1.33.6+k3s2",
		"released": base + "/api/v1/sources/jujud-operator/versions/3.6.4",
		"2.9":      base + "/api/v1/sources/jujud-operator/versions/2.9.45",
	}
	deadline := time.Now().Add(60 * time.Second)
	for name, loc := range want {
		for {
			resp, err := client.Get(base + "/v1-release/channels/" + name)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusFound && resp.Header.Get("Location") == loc {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("channel %s: want 302 to %s; last answer %v %v\nlog:\n%s", name, loc, resp, err, stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	resp, err := http.Get(base + "/api/v1/resolve?source=jujud-operator&current=2.9.33&stream=released")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var answer struct {
		Target string   `json:"target"`
		Path   []string `json:"path"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatal(err)
	}
	// The README shows this very answer.
	checkDocJSON(t, "../../README.md", "$ curl -s 'localhost:8080/api/v1/resolve?source=jujud-operator&current=2.9.33&stream=released'", raw)
	if answer.Target != "2.9.45" || len(answer.Path) != 1 {
		t.Errorf("resolve from 2.9.33: got target %q path %v, want 2.9.45 and a one-step path (3.x is another major)", answer.Target, answer.Path)
	}

	// docs/cli.md shows these commands run against the demo: its examples
	// are this run's output (times aside), so they cannot drift.
	c := &tmcli{t: t, env: map[string]string{"TIDEMARK_SERVER": base}}
	for _, args := range [][]string{{"channels"}, {"sources"}} {
		out := c.must(args...)
		checkDocExample(t, "../../docs/cli.md", "$ tidemark "+strings.Join(args, " "), out)
	}
}

// checkDocJSON checks that the JSON printed after the line prompt in file
// (up to the fence's end) is got, as JSON.
func checkDocJSON(t *testing.T, file, prompt string, got []byte) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), prompt+"\n")
	if !ok {
		t.Errorf("%s has no example %q", file, prompt)
		return
	}
	block, _, _ := strings.Cut(after, "```")
	var want, have any
	if err := json.Unmarshal([]byte(block), &want); err != nil {
		t.Errorf("%s's example %q is not JSON: %v", file, prompt, err)
		return
	}
	_ = json.Unmarshal(got, &have)
	w, _ := json.Marshal(want)
	h, _ := json.Marshal(have)
	if string(w) != string(h) {
		t.Errorf("%s's example %q differs from what the demo answers:\n%s", file, prompt, got)
	}
}

// stamps are what differs from run to run in an example: times,
// durations and loopback ports.
var stamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\b\d+(\.\d+)?(ms|µs|s|m|h)\b|127\.0\.0\.1:\d+|localhost:\d+`)

// checkDocExample finds the block of file that starts with the line
// prompt and checks that the lines after it (up to the next prompt or the
// fence's end) are out, with spaces and stamps evened out.
func checkDocExample(t *testing.T, file, prompt, out string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	start := slices.Index(lines, prompt)
	if start < 0 {
		t.Errorf("%s has no example %q", file, prompt)
		return
	}
	var doc []string
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "```") {
			break
		}
		doc = append(doc, l)
	}
	even := func(s string) string {
		s = stamps.ReplaceAllString(s, "<t>")
		var out []string
		for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
		return strings.Join(out, "\n")
	}
	if got, want := even(out), even(strings.Join(doc, "\n")); got != want {
		t.Errorf("%s's example %q differs from what the demo prints; replace it with:\n%s", file, prompt, out)
	}
}
