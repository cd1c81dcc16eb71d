package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docBlock is the first fenced block of docs/lifecycle.md in lang.
func docBlock(t *testing.T, lang string) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/lifecycle.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "```"+lang+"\n")
	block, _, _ := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("docs/lifecycle.md has no %s block", lang)
	}
	return block
}

// inDoc reports whether docs/lifecycle.md says s, spaces evened out.
func inDoc(t *testing.T, s string) bool {
	t.Helper()
	b, err := os.ReadFile("../../docs/lifecycle.md")
	if err != nil {
		t.Fatal(err)
	}
	even := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	return strings.Contains(even(string(b)), even(s))
}

// TestLifecycleCommandsEndToEnd runs tidemark serve with the lifecycle
// of docs/lifecycle.md (its endoflife.date file: 1.32 and 1.33 ended on
// their real dates, 1.34 has no end yet) and checks the page's examples
// against what the service answers: tidemark lifecycle and its JSON, the
// warning, running and tidemark resolve of a cluster on an expired
// version, and the graph's EndOfLife message.
func TestLifecycleCommandsEndToEnd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kubernetes.json")
	if err := os.WriteFile(file, []byte(docBlock(t, "json")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(e2eConfig, "    build: 'k3s(\\d+)'\n",
		"    build: 'k3s(\\d+)'\n    lifecycle:\n      support: {minors: 3, grace: 90d}\n      deprecate_before: 60d\n      file: "+file+"\n", 1)
	c := startServeWith(t, cfg)
	for i, v := range []string{"v1.32.9-k3s1", "v1.32.10-k3s1", "v1.33.6-k3s1"} {
		req, _ := http.NewRequest(http.MethodGet, c.env["TIDEMARK_SERVER"]+"/v1-release/channels/latest", nil)
		req.Header.Set("X-SUC-Cluster-ID", "cluster-"+string(rune('a'+i)))
		req.Header.Set("X-SUC-Latest-Version", v)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if w := res.Header.Get("Warning"); !strings.HasPrefix(w, `299 tidemark "`+strings.Replace(v, "-k3s", "+k3s", 1)+" is expired: its line ") {
			t.Errorf("%s: Warning %q", v, w)
		} else if i == 0 && !inDoc(t, "Warning: "+w) {
			t.Errorf("docs/lifecycle.md does not show the header a cluster on %s gets: Warning: %s", v, w)
		}
	}
	var out string
	deadline := time.Now().Add(15 * time.Second)
	for {
		out = c.must("lifecycle", "k3s")
		if strings.Contains(out, "2026-02-28  2\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	checkDocExample(t, "../../docs/lifecycle.md", "$ tidemark lifecycle k3s", out)
	checkDocExample(t, "../../docs/cli.md", "$ tidemark lifecycle k3s", out)
	out = c.must("resolve", "--channel", "latest", "--current", "v1.32.9-k3s1")
	checkDocExample(t, "../../docs/lifecycle.md", "$ tidemark resolve --channel latest --current v1.32.9-k3s1", out)
	base := c.env["TIDEMARK_SERVER"]
	checkDocJSON(t, "../../docs/lifecycle.md", "$ curl -s $TIDEMARK_SERVER/api/v1/sources/k3s/lifecycle", []byte(httpGet(t, base+"/api/v1/sources/k3s/lifecycle")))

	req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/latest?current=v1.32.9-k3s1", nil)
	req.Header.Set("Accept", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ch struct {
		Running json.RawMessage `json:"running"`
	}
	err = json.NewDecoder(res.Body).Decode(&ch)
	res.Body.Close()
	if err != nil || !inDoc(t, `"running":`+string(ch.Running)) {
		t.Errorf("docs/lifecycle.md does not show the running a cluster on v1.32.9 gets: %s (%v)", ch.Running, err)
	}
	var ver struct {
		Lifecycle json.RawMessage `json:"lifecycle"`
	}
	if err := json.Unmarshal([]byte(httpGet(t, base+"/api/v1/sources/k3s/versions/v1.32.9+k3s1")), &ver); err != nil || !inDoc(t, `"lifecycle":`+string(ver.Lifecycle)) {
		t.Errorf("docs/lifecycle.md does not show a version's lifecycle: %s (%v)", ver.Lifecycle, err)
	}
	graph := httpGet(t, base+"/api/upgrades_info/v1/graph?channel=latest")
	var g struct {
		ConditionalEdges []struct {
			Risks []struct{ Name, Message string } `json:"risks"`
		} `json:"conditionalEdges"`
	}
	if err := json.Unmarshal([]byte(graph), &g); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ce := range g.ConditionalEdges {
		for _, r := range ce.Risks {
			if r.Name == "EndOfLife" && strings.Contains(r.Message, "1.32") {
				found = true
				if !inDoc(t, "("+"`"+r.Message+"`") {
					t.Errorf("docs/lifecycle.md does not show the graph's message %q", r.Message)
				}
			}
		}
	}
	if !found {
		t.Errorf("no EndOfLife risk for 1.32 in the graph: %s", graph)
	}

	// SIGHUP re-reads the file: 1.34 gets an end in the past, no restart.
	ended := strings.Replace(docBlock(t, "json"), `"cycle": "1.34", "releaseDate": "2025-08-27", "eol": false`,
		`"cycle": "1.34", "releaseDate": "2025-08-27", "eol": "2026-10-27"`, 1)
	if err := os.WriteFile(file, []byte(ended), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(c.must("lifecycle", "k3s"), "1.34  expired") {
		if time.Now().After(deadline) {
			t.Fatalf("1.34 not expired after SIGHUP:\n%s", c.must("lifecycle", "k3s"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if logs := c.logs.String(); strings.Contains(logs, "sources changed") {
		t.Errorf("a lifecycle change is said to need a restart:\n%s", logs)
	}
}
