package server

import (
	"html"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestConsoleMarksGatedVersions: versions a release gate holds are marked
// on the source page with the gate and its state, apart from blocked ones.
func TestConsoleMarksGatedVersions(t *testing.T) {
	src := semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	both := []string{"linux/amd64", "linux/arm64"}
	src.Gates = resolver.Gates{Platforms: both, SignatureKeyFile: "/etc/tidemark/cosign.pub", SignatureKeyID: "key-1", Soak: 24 * time.Hour}
	sd := sourceData(src, k3sTags(), nil)
	for i := range sd.Tags {
		tag := &sd.Tags[i]
		tag.FirstSeen = resolver.InstantOf(scanned.Add(-48 * time.Hour))
		tag.Gates = &resolver.GateChecks{Digest: tag.Digest, Platforms: both, KeyID: "key-1", Signature: resolver.GateOK}
		switch tag.Name {
		case "v1.34.2-k3s2":
			tag.Gates.MissingPlatforms = []string{"linux/arm64"}
		case "v1.34.3-rc1-k3s1":
			tag.Gates.Signature = resolver.GateInvalid
		case "v1.34.1-k3s1":
			tag.FirstSeen = resolver.InstantOf(scanned)
		case "v1.32.10-k3s1": // blocked too
			tag.Gates.Signature = resolver.GateMissing
		}
	}
	sd.Blocks = []catalog.Block{{Source: "k3s", Version: "v1.32.10+k3s1", Reason: "CVE", BlockedBy: "ops", BlockedAt: scanned}}
	snap := snapshot.New(k3sChannels(), []catalog.SourceData{sd}, nil, loadedAt)
	_, ts, _ := newTestServer(t, snap, "")

	res, body := get(t, ts, "/ui/sources/k3s")
	text := html.UnescapeString(string(body))
	if res.StatusCode != 200 {
		t.Fatalf("GET /ui/sources/k3s: %d\n%.600s", res.StatusCode, text)
	}
	for _, w := range []string{
		`<dd id="gates"><ul class="inline"><li>platforms linux/amd64, linux/arm64</li><li>cosign signature</li><li>soak 24h</li></ul></dd>`,
		`<tr data-version="v1.34.2+k3s2" class="gated">`,
		`<span class="badge gated">gated</span><ul class="gates"><li class="gate-platforms">platforms missing linux/arm64</li></ul>`,
		`<tr data-version="v1.34.3-rc1+k3s1" class="gated">`,
		`<li class="gate-signature">signature invalid</li>`,
		`<tr data-version="v1.34.1+k3s1" class="gated">`,
		`<li class="gate-soak">soak until <time datetime="2026-05-02T11:59:00Z">2026-05-02T11:59:00Z</time></li>`,
		`<tr data-version="v1.32.10+k3s1" class="blocked gated">`,
		`<span class="badge blocked">blocked</span> <span class="why">CVE</span> <span class="badge gated">gated</span><ul class="gates"><li class="gate-signature">signature missing</li></ul>`,
		`<tr data-version="v1.34.0+k3s1">`,
		`<span class="muted">ok, gates passed</span>`,
	} {
		if !strings.Contains(text, w) {
			t.Errorf("no %q in the source page", w)
		}
	}
}
