package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestPromotionExampleRunsAsDocumented plays docs/promotion.md's worked
// example against `tidemark demo` run through Main, as make demo runs it:
// three clusters poll canary, canary is released v1.33.6+k3s2 by a pin,
// they adopt it, and promoted follows once the 20 s soak is over. Every
// command's output in the example is this run's (times and ports aside),
// in the order the example shows it, so the example cannot drift.
func TestPromotionExampleRunsAsDocumented(t *testing.T) {
	const doc = "../../docs/promotion.md"
	walk := newDocWalk(t, doc)
	// The configuration the example shows is the demo's.
	_, yaml, _ := strings.Cut(walk.text, "\n## Try it in five minutes with the demo\n")
	_, yaml, _ = strings.Cut(yaml, "```yaml\n")
	yaml, _, _ = strings.Cut(yaml, "```")
	conf := demoConfig("127.0.0.1:5000", "127.0.0.1:8080", "http://127.0.0.1:9/")
	for _, l := range strings.Split(strings.TrimRight(yaml, "\n"), "\n") {
		if !strings.Contains(conf, "\n"+l+"\n") {
			t.Errorf("%s shows the demo's configuration line %q; the demo has no such line", doc, l)
		}
	}
	if yaml == "" {
		t.Errorf("%s shows no yaml of the demo's configuration", doc)
	}
	base, dbURL, stderr := startDemo(t)

	anon := &tmcli{t: t, env: map[string]string{"TIDEMARK_SERVER": base}}
	token := strings.TrimSpace(anon.with("DATABASE_URL", dbURL).must("token", "create", "--name", "example", "--scope", "promote"))
	c := anon.with("TIDEMARK_TOKEN", token)
	waitFor(t, "canary and promoted to answer v1.33.4+k3s1", func() bool {
		_, p, _ := c.run("channels", "promoted")
		_, k, _ := c.run("channels", "canary")
		return strings.Contains(p, "v1.33.4+k3s1") && strings.Contains(k, "v1.33.4+k3s1")
	}, stderr)

	cli := func(args ...string) {
		shown := make([]string, len(args))
		for i, a := range args {
			shown[i] = a
			if strings.Contains(a, " ") {
				shown[i] = `"` + a + `"`
			}
		}
		walk.next("$ bin/tidemark "+strings.Join(shown, " "), c.must(args...))
	}
	cli("channels", "canary")
	cli("channels", "promoted")

	// The clusters, as system-upgrade-controller asks: a HEAD of the
	// channel URL naming the cluster and the version it runs.
	poll := func(reported string) {
		prompt := fmt.Sprintf(`$ for c in c1 c2 c3; do curl -sI -H "X-SUC-Cluster-ID: $c" -H 'X-SUC-Latest-Version: %s' $TIDEMARK_SERVER/v1-release/channels/canary | grep Location; done`, reported)
		var out strings.Builder
		for _, id := range []string{"c1", "c2", "c3"} {
			fmt.Fprintf(&out, "Location: %s\n", headLocation(t, base+"/v1-release/channels/canary", id, reported))
		}
		walk.next(prompt, out.String())
	}
	poll("v1.33.4-k3s1")
	// A cluster counts as evidence for a version only when it was first
	// seen before the channel first told it: the fleet records sightings
	// once a second, so wait for them as a person typing would.
	waitFor(t, "the fleet to record three clusters on canary", func() bool {
		var fl struct{ Active int }
		getAuthJSON(t, base+"/api/v1/fleet?channel=canary", token, &fl)
		return fl.Active == 3
	}, stderr)

	cli("promote", "canary", "v1.33.6+k3s2", "--reason", "release to canary")
	poll("v1.33.4-k3s1")
	poll("v1.33.6-k3s2")
	waitFor(t, "canary's evidence: three adopted", func() bool {
		return strings.Contains(evenStamps(c.must("evidence", "canary")), "v1.33.6+k3s2 3 3 0")
	}, stderr)
	cli("evidence", "canary")

	promotion := func() string {
		resp, err := http.Get(base + "/api/v1/channels/promoted")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ch struct{ Promotion json.RawMessage }
		if err := json.NewDecoder(resp.Body).Decode(&ch); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, ch.Promotion, "", "  "); err != nil {
			t.Fatal(err)
		}
		return out.String() + "\n"
	}
	const jq = "$ curl -s $TIDEMARK_SERVER/api/v1/channels/promoted | jq .promotion"
	// The channel object reads the evidence the leader saved, as the
	// evidence command does; give a replica's copy its moment.
	waitFor(t, "promoted to wait for the soak", func() bool { return strings.Contains(promotion(), `"soak `) }, stderr)
	walk.next(jq, promotion())

	// The soak is 20 s from the pin; the leader evaluates every 2 s.
	waitFor(t, "promoted to move to v1.33.6+k3s2", func() bool {
		return strings.Contains(c.must("channels", "promoted"), "v1.33.6+k3s2")
	}, stderr)
	cli("channels", "promoted")
	cli("history", "promoted")
	walk.next(jq, promotion())

	const note = "demo: notification dev.tidemark.channel.promoted: channel promoted: v1.33.4+k3s1 -> v1.33.6+k3s2 (by tidemark:promotion)"
	if !strings.Contains(walk.text, "\n"+note+"\n") {
		t.Errorf("%s does not show the demo's line %q", doc, note)
	}
	waitFor(t, "the demo to print the promotion's notification", func() bool { return strings.Contains(stderr.String(), note) }, stderr)
}

// startDemo runs `tidemark demo` through Main on a fresh database and a
// free loopback port until the test ends; it returns the server's URL, the
// database's and the demo's output.
func startDemo(t *testing.T) (base, dbURL string, stderr *testutil.LockedBuffer) {
	t.Helper()
	dbURL = storetest.URL(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	stderr = &testutil.LockedBuffer{}
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
	return "http://" + addr, dbURL, stderr
}

// waitFor polls cond every 200 ms for up to 45 s.
func waitFor(t *testing.T, what string, cond func() bool, log *testutil.LockedBuffer) {
	t.Helper()
	for deadline := time.Now().Add(45 * time.Second); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 45s for %s\ndemo's log:\n%s", what, log.String())
		}
	}
}

// headLocation is the Location a HEAD of url answers cluster id running
// reported (curl -sI with the SUC headers).
func headLocation(t *testing.T, url, id, reported string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodHead, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-SUC-Cluster-ID", id)
	req.Header.Set("X-SUC-Latest-Version", reported)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("HEAD %s as %s on %s: %d, want 302", url, id, reported, resp.StatusCode)
	}
	return resp.Header.Get("Location")
}

func getAuthJSON(t *testing.T, url, token string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// docWalk checks a document's examples in the order they appear: each
// prompt is looked for after the previous one, so a command shown twice
// (before and after a change) is checked against each of its outputs.
type docWalk struct {
	t     *testing.T
	file  string
	text  string
	lines []string
	pos   int
}

func newDocWalk(t *testing.T, file string) *docWalk {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return &docWalk{t: t, file: file, text: string(b), lines: strings.Split(string(b), "\n")}
}

// next checks that the lines after the next line prompt (up to the next
// prompt or the fence's end) are out, with spaces and stamps evened out
// as checkDocExample does.
func (w *docWalk) next(prompt, out string) {
	w.t.Helper()
	start := -1
	for i := w.pos; i < len(w.lines); i++ {
		if w.lines[i] == prompt {
			start = i
			break
		}
	}
	if start < 0 {
		w.t.Errorf("%s has no example %q after line %d; add it with:\n%s", w.file, prompt, w.pos, out)
		return
	}
	var doc []string
	for _, l := range w.lines[start+1:] {
		if strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "```") {
			break
		}
		doc = append(doc, l)
	}
	w.pos = start + 1
	if got, want := evenStamps(out), evenStamps(strings.Join(doc, "\n")); got != want {
		w.t.Errorf("%s's example %q (line %d) differs from what the demo prints; replace it with:\n%s", w.file, prompt, start+1, out)
	}
}

// evenStamps replaces times, durations and loopback ports and evens out
// runs of spaces.
func evenStamps(s string) string {
	s = stamps.ReplaceAllString(s, "<t>")
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(out, "\n")
}
