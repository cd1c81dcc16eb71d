package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/distreg"
	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// channelTag asks the channel URL as system-upgrade-controller does and
// returns the tag it would pull ("" when the answer is not a 302).
func channelTag(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	res, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound {
		return ""
	}
	return strings.ReplaceAll(filepath.Base(res.Header.Get("Location")), "+", "-")
}

// TestPushIsServedWithoutAScan runs a real distribution registry whose
// notifications go to `tidemark serve`: a pushed tag is served by the
// channel URL within a second, and no scan runs for it.
func TestPushIsServedWithoutAScan(t *testing.T) {
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	ctx := context.Background()
	dbURL := storetest.URL(t)
	st, err := store.Open(ctx, dbURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	token, err := st.CreateToken(ctx, "registry", []string{"scan"})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := st.CreateToken(ctx, "dash", []string{"read"})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	reg, err := distreg.StartWith(ctx, t.TempDir(), distreg.Options{
		NotifyURL: "http://" + addr + "/api/v1/webhooks/distribution", NotifyToken: token,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	if _, err := distreg.Push(ctx, reg.Host, "rancher/k3s-upgrade", []string{"v1.33.5-k3s1"}, 1); err != nil {
		t.Fatal(err)
	}

	// A receiver of outbound notifications: the push moves channel latest.
	got := make(chan notify.CloudEvent, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ce notify.CloudEvent
		if err := json.NewDecoder(r.Body).Decode(&ce); err != nil {
			t.Errorf("notification body: %v", err)
		}
		got <- ce
	}))
	t.Cleanup(recv.Close)

	cfg := fmt.Sprintf(`
notify:
  - name: ops
    url: %s
sources:
  - name: k3s
    image: %s/rancher/k3s-upgrade
    scheme: semver
    build: 'k3s(\d+)'
    insecure: true
    interval: 1h
channels:
  - name: latest
    source: k3s
`, recv.URL, reg.Host)
	cfgPath := filepath.Join(t.TempDir(), "tidemark.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_CONFIG": cfgPath, "TIDEMARK_LISTEN": addr}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	logs := &testutil.LockedBuffer{}
	go func() {
		done <- Main(sctx, []string{"serve"}, strings.NewReader(""), logs, logs, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20s")
		}
		if t.Failed() {
			t.Logf("serve logs:\n%s", logs.String())
		}
	})

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	channelURL := "http://" + addr + "/v1-release/channels/latest"
	waitUntil := func(what string, within time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > within {
				t.Fatalf("%s: not within %v", what, within)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(start)
	}
	// The registry also notifies the seed push, which may index the tag
	// before the start-up scan runs: wait for both, or the scan below
	// would be the start-up one arriving late.
	waitUntil("the start-up scan serves v1.33.5-k3s1", 20*time.Second, func() bool {
		res, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK && channelTag(t, noRedirect, channelURL) == "v1.33.5-k3s1" && scanFinished(addr)
	})
	scanBefore := lastScan(t, addr)
	// The start-up scan's commit is counted where operators look.
	if n := metricValue(t, "http://"+addr+"/metrics", "tidemark_store_scans_per_commit_count"); n < 1 {
		t.Errorf("tidemark_store_scans_per_commit_count %v after the start-up scan, want >= 1", n)
	}

	// A cluster polls as system-upgrade-controller does: seen on latest
	// before the push, so it may vote on what the push brings.
	poll := func(reported string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, channelURL, nil)
		req.Header.Set("X-SUC-Cluster-ID", "edge-1")
		req.Header.Set("X-SUC-Latest-Version", reported)
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	poll("v1.33.5-k3s1")

	pushed, err := distreg.Push(ctx, reg.Host, "rancher/k3s-upgrade", []string{"v1.33.6-k3s1"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	took := waitUntil("the pushed v1.33.6-k3s1 is served", 5*time.Second, func() bool {
		return channelTag(t, noRedirect, channelURL) == "v1.33.6-k3s1"
	})
	t.Logf("push -> served in %v", took)
	if after := lastScan(t, addr); !after.Equal(scanBefore) {
		t.Errorf("a scan ran (last scan started %v, was %v); the push alone should serve the tag", after, scanBefore)
	}

	// The cluster is told the pushed version and adopts it: in latest's
	// evidence within 5 s (recorded, counted by the triggers, computed by
	// this leading replica's pass).
	poll("v1.33.5-k3s1")
	poll("v1.33.6-k3s1")
	took = waitUntil("the poll is in latest's evidence", 5*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/channels/latest/evidence?version=v1.33.6-k3s1", nil)
		req.Header.Set("Authorization", "Bearer "+reader)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		var ev struct{ Told, Adopted int }
		return res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&ev) == nil && ev.Told == 1 && ev.Adopted == 1
	})
	t.Logf("poll -> evidence in %v", took)
	// The CLI shows the same figures.
	var out, errs bytes.Buffer
	cliEnv := map[string]string{"TIDEMARK_SERVER": "http://" + addr, "TIDEMARK_TOKEN": reader}
	if code := Main(ctx, []string{"evidence", "latest"}, strings.NewReader(""), &out, &errs, func(k string) string { return cliEnv[k] }); code != 0 ||
		!regexp.MustCompile(`(?m)^VERSION\s+TOLD\s+ADOPTED\s+STUCK\s+FIRST TOLD\s+ADOPTION P50\s+HALTS\n(.*\n)*v1\.33\.6\+k3s1\s+1\s+1\s+0\s+\d{4}-\S+Z\s+\d+s\s+0$`).MatchString(out.String()) {
		t.Errorf("tidemark evidence latest: exit %d\n%s%s", code, out.String(), errs.String())
	}
	checkDocExample(t, "../../docs/cli.md", "$ tidemark evidence latest", out.String())
	out.Reset()
	if code := Main(ctx, []string{"evidence", "latest", "--version", "v1.33.6-k3s1", "-o", "json"}, strings.NewReader(""), &out, &errs, func(k string) string { return cliEnv[k] }); code != 0 ||
		!strings.Contains(out.String(), `"told": 1`) {
		t.Errorf("tidemark evidence latest --version -o json: exit %d\n%s%s", code, out.String(), errs.String())
	}

	// The distribution registry deletes by digest, and its delete event
	// names no tag: the tags that pointed there are confirmed gone and
	// marked absent, still without a scan.
	deleteManifest(t, reg.Host, "rancher/k3s-upgrade", pushed.String())
	took = waitUntil("latest is back on v1.33.5-k3s1 after the delete", 5*time.Second, func() bool {
		return channelTag(t, noRedirect, channelURL) == "v1.33.5-k3s1"
	})
	t.Logf("delete -> no longer served in %v", took)
	if after := lastScan(t, addr); !after.Equal(scanBefore) {
		t.Errorf("a scan ran (last scan started %v, was %v); the delete event alone should be enough", after, scanBefore)
	}

	// The start-up scan moved latest from nothing to v1.33.5, the push
	// from there to v1.33.6, the delete back: three events, in that order.
	for _, want := range [][2]string{{"", "v1.33.5+k3s1"}, {"v1.33.5+k3s1", "v1.33.6+k3s1"}, {"v1.33.6+k3s1", "v1.33.5+k3s1"}} {
		select {
		case ce := <-got:
			if ce.Type != "dev.tidemark.channel.changed" || ce.Data.Channel != "latest" || ce.Data.From != want[0] || ce.Data.To != want[1] {
				t.Errorf("notification %+v, want latest moved from %q to %q", ce, want[0], want[1])
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification of latest moving to %s within 10s", want[1])
		}
	}

}

// deleteManifest deletes repo's manifest digest from the registry, as
// `crane delete` or a registry UI does (by digest: distribution 2.8 deletes
// no tag alone).
func deleteManifest(t *testing.T, host, repo, digest string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, "http://"+host+"/v2/"+repo+"/manifests/"+digest, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("DELETE manifest %s: %d", digest, res.StatusCode)
	}
}

// scanFinished reports whether the source's status shows a finished scan.
func scanFinished(addr string) bool {
	res, err := http.Get("http://" + addr + "/api/v1/sources/k3s")
	if err != nil {
		return false
	}
	defer res.Body.Close()
	var src openapi.Source
	if err := json.NewDecoder(res.Body).Decode(&src); err != nil || src.LastScan == nil {
		return false
	}
	return src.LastScan.Finished != nil
}

func lastScan(t *testing.T, addr string) time.Time {
	t.Helper()
	res, err := http.Get("http://" + addr + "/api/v1/sources/k3s")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var src openapi.Source
	if err := json.NewDecoder(res.Body).Decode(&src); err != nil || src.LastScan == nil {
		t.Fatalf("source status: %v %+v", err, src)
	}
	return src.LastScan.Started
}

// metricValue is the value of an unlabelled series on a /metrics page.
func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s on %s", name, url)
	return 0
}
