package server

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestARegistryDownIsSaid: when a source's last scan failed, a channel
// that answers nothing says so (and when), and /readyz, still 200, says
// it serves what was indexed before.
func TestARegistryDownIsSaid(t *testing.T) {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	sd := sourceData(src, k3sTags(), nil)
	failedAt := time.Date(2026, 5, 1, 12, 5, 0, 0, time.UTC)
	sd.LastScan = &catalog.Scan{Source: "k3s", Started: failedAt.Add(-time.Second), Finished: failedAt, Outcome: "failed",
		Error: "registry index.docker.io unreachable: cannot resolve index.docker.io: no such host"}
	snap := snapshot.New(k3sChannels(), []catalog.SourceData{sd}, nil, loadedAt)
	_, ts, _ := newTestServer(t, snap, "")

	want := `source "k3s"'s last scan failed at 2026-05-01T12:05:00Z: registry index.docker.io unreachable: cannot resolve index.docker.io: no such host`
	res, body := get(t, ts, "/v1-release/channels/v1.99")
	if res.StatusCode != 404 || !strings.Contains(string(body), `eligible for channel \"v1.99\"; `+strings.ReplaceAll(want, `"`, `\"`)) {
		t.Errorf("a channel with nothing eligible while its registry is down: %d %s", res.StatusCode, body)
	}
	res, body = get(t, ts, "/readyz")
	if res.StatusCode != 200 || string(body) != "ok, serving what was indexed before: "+want+"\n" {
		t.Errorf("/readyz with a source's last scan failed: %d %q", res.StatusCode, body)
	}
	// A channel that answers is unchanged.
	if res, _ := get(t, ts, "/v1-release/channels/v1.33"); res.StatusCode != 302 {
		t.Errorf("a channel with an answer: %d, want 302", res.StatusCode)
	}
}
