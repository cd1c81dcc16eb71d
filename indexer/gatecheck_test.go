package indexer

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tidemark-dev/tidemark/internal/cosigntest"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

// sigTags are cosign's signature tags, kept out of the index as the
// contract's example exclude does.
var sigTags = regexp.MustCompile(`\.sig$`)

// pushRepo is the test registry's repository as a push client sees it
// (straight to the inner registry: pushes are not the indexer's requests).
func pushRepo(t *testing.T, reg *testRegistry, repo string) name.Repository {
	t.Helper()
	inner := httptest.NewServer(reg.inner)
	t.Cleanup(inner.Close)
	r, err := name.NewRepository(strings.TrimPrefix(inner.URL, "http://")+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// gateStates is every version's servable flag and gate state, as the
// server would list them now.
func gateStates(t *testing.T, st *store.Store, ix *Indexer) map[string]string {
	t.Helper()
	snap := snapshot.New(nil, []catalog.SourceData{indexed(t, st, ix)}, nil, time.Now())
	vs, err := snap.Versions("app", resolver.Testing, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, v := range vs {
		s := "held"
		if v.Servable {
			s = "servable"
		}
		out[v.Name] = s + " platforms=" + v.Gates.Platforms + " signature=" + v.Gates.Signature
	}
	return out
}

func TestGatesHoldUntilCompleteAndSignedThenRescanAsksNothing(t *testing.T) {
	reg := newTestRegistry(t)
	repo := pushRepo(t, reg, "app")
	signer, stranger := cosigntest.NewSigner(t), cosigntest.NewSigner(t)
	both := []string{"linux/amd64", "linux/arm64"}

	ok := cosigntest.PushIndex(t, repo, "v1.0.0", both...)
	signer.SignAndPush(t, repo, ok)
	amd64Only := cosigntest.PushIndex(t, repo, "v1.1.0", "linux/amd64")
	signer.SignAndPush(t, repo, amd64Only)
	unsigned := cosigntest.PushIndex(t, repo, "v1.2.0", both...)
	wrongKey := cosigntest.PushIndex(t, repo, "v1.3.0", both...)
	stranger.SignAndPush(t, repo, wrongKey)
	otherDigest := cosigntest.PushIndex(t, repo, "v1.4.0", both...)
	p := cosigntest.Payload(t, repo, ok) // names v1.0.0's digest
	cosigntest.PushSignature(t, repo, otherDigest, p, signer.Sign(t, p))

	st, ix := newStoreIndexer(t, reg, func(s *Source) {
		s.Gates = resolver.Gates{Platforms: both, SignatureKeyFile: signer.PubFile}
		s.Exclude = sigTags
	})
	ctx := context.Background()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"v1.0.0": "servable platforms=ok signature=ok",
		"v1.1.0": "held platforms=missing linux/arm64 signature=ok",
		"v1.2.0": "held platforms=ok signature=missing",
		"v1.3.0": "held platforms=ok signature=invalid",
		"v1.4.0": "held platforms=ok signature=invalid",
	}
	if diff := cmp.Diff(want, gateStates(t, st, ix)); diff != "" {
		t.Fatalf("after the first scan (-want +got):\n%s", diff)
	}
	targets, err := st.GateTargets(ctx, "app", []string{"v1.4.0"})
	if err != nil || len(targets) != 1 || !strings.Contains(targets[0].Gates.SignatureReason, "payload names another digest: "+ok.String()) {
		t.Errorf("v1.4.0's stored reason: %+v, %v", targets, err)
	}

	// arm64 arrives in the same tag (a new index digest, signed), the
	// missing signature is pushed, and the bad ones are replaced.
	complete := cosigntest.PushIndex(t, repo, "v1.1.0", both...)
	signer.SignAndPush(t, repo, complete)
	for _, d := range []v1.Hash{unsigned, wrongKey, otherDigest} {
		signer.SignAndPush(t, repo, d)
	}
	// The re-tag is noticed by the digest re-check; the gates follow in the
	// same scan.
	if err := ix.RecheckDigests(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	for tag := range want {
		want[tag] = "servable platforms=ok signature=ok"
	}
	if diff := cmp.Diff(want, gateStates(t, st, ix)); diff != "" {
		t.Fatalf("after arm64 and the signatures arrived (-want +got):\n%s", diff)
	}

	// Every version servable, nothing changed: no manifest request at all.
	reg.manifests.Store(0)
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if n := reg.manifests.Load(); n != 0 {
		t.Errorf("no-change rescan with every version servable made %d manifest requests, want 0", n)
	}
}

func TestHeldVersionIsAskedAgainOnEveryScan(t *testing.T) {
	reg := newTestRegistry(t)
	repo := pushRepo(t, reg, "app")
	signer := cosigntest.NewSigner(t)
	d := cosigntest.PushIndex(t, repo, "v2.0.0", "linux/amd64", "linux/arm64")
	st, ix := newStoreIndexer(t, reg, func(s *Source) {
		s.Gates = resolver.Gates{Platforms: []string{"linux/amd64", "linux/arm64"}, SignatureKeyFile: signer.PubFile}
		s.Exclude = sigTags
	})
	ctx := context.Background()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if got := gateStates(t, st, ix)["v2.0.0"]; got != "held platforms=ok signature=missing" {
		t.Fatalf("unsigned: %s", got)
	}
	var changes []string
	ix.onChng = func(s string) { changes = append(changes, s) }

	// A plain scan (no digest re-check): the signature pushed after the
	// image is found because the version is still held.
	signer.SignAndPush(t, repo, d)
	reg.manifests.Store(0)
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if got := gateStates(t, st, ix)["v2.0.0"]; got != "servable platforms=ok signature=ok" {
		t.Errorf("after the signature was pushed: %s", got)
	}
	// The platforms of an unchanged digest are not asked again: only the
	// signature (its .sig tag manifest) is.
	if n := reg.manifests.Load(); n != 1 {
		t.Errorf("re-checking the held signature made %d manifest requests, want 1 (the .sig tag)", n)
	}
	// Once for the recorded scan (the status), once for the gates.
	if diff := cmp.Diff([]string{"app", "app"}, changes); diff != "" {
		t.Errorf("OnChange calls (-want +got):\n%s", diff)
	}
}

func TestNewRefusesABadGateNamingIt(t *testing.T) {
	reg := newTestRegistry(t)
	for _, tc := range []struct {
		gates resolver.Gates
		want  string
	}{
		{resolver.Gates{Platforms: []string{"linux"}}, `source "app": gates.platforms: platform "linux"`},
		{resolver.Gates{SignatureKeyFile: "/nonexistent/cosign.pub"}, "/nonexistent/cosign.pub"},
	} {
		src := testSource(t, "app", reg.host+"/app")
		src.Gates = tc.gates
		_, err := New(Options{Sources: []Source{src}, Store: unusedStore{}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("gates %+v: %v, want one line with %q", tc.gates, err, tc.want)
		}
	}
}

// A pushed tag of a gated source is gated when it is indexed, not at the
// next scan: a complete, signed push is servable at once; an unsigned one
// is held with its state.
func TestPushedTagIsGatedAtOnce(t *testing.T) {
	reg := newTestRegistry(t)
	repo := pushRepo(t, reg, "app")
	signer := cosigntest.NewSigner(t)
	both := []string{"linux/amd64", "linux/arm64"}
	st, ix := newStoreIndexer(t, reg, func(s *Source) {
		s.Gates = resolver.Gates{Platforms: both, SignatureKeyFile: signer.PubFile}
		s.Exclude = sigTags
	})
	ctx := context.Background()

	signed := cosigntest.PushIndex(t, repo, "v2.0.0", both...)
	signer.SignAndPush(t, repo, signed)
	cosigntest.PushIndex(t, repo, "v2.1.0", both...)
	for _, tag := range []string{"v2.0.0", "v2.1.0"} {
		ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: tag})
	}
	waitIdle(t, ix)
	want := map[string]string{
		"v2.0.0": "servable platforms=ok signature=ok",
		"v2.1.0": "held platforms=ok signature=missing",
	}
	if diff := cmp.Diff(want, gateStates(t, st, ix)); diff != "" {
		t.Fatalf("gates of pushed tags (-want +got):\n%s", diff)
	}
	if reg.lists.Load() != 0 {
		t.Errorf("%d tag list requests, want none (push, not scan)", reg.lists.Load())
	}
}

// TestASignaturePushedAfterItsImageReleasesIt: cosign pushes
// sha256-<hex>.sig after the image; the registry's event for that tag (an
// excluded one) re-checks the version it signs, at once (issue 25 item 4).
func TestASignaturePushedAfterItsImageReleasesIt(t *testing.T) {
	reg := newTestRegistry(t)
	repo := pushRepo(t, reg, "app")
	signer := cosigntest.NewSigner(t)
	st, ix := newStoreIndexer(t, reg, func(s *Source) {
		s.Gates = resolver.Gates{SignatureKeyFile: signer.PubFile}
		s.Exclude = sigTags
	})
	ctx := context.Background()
	d := cosigntest.PushIndex(t, repo, "v3.0.0", "linux/amd64")
	ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "v3.0.0"})
	waitIdle(t, ix)
	if got := gateStates(t, st, ix)["v3.0.0"]; got != "held platforms= signature=missing" {
		t.Fatalf("before the signature: %s", got)
	}
	signer.SignAndPush(t, repo, d)
	ix.Push(ctx, PushEvent{Host: reg.host, Repository: "app", Tag: "sha256-" + d.Hex + ".sig"})
	waitIdle(t, ix)
	if got := gateStates(t, st, ix)["v3.0.0"]; got != "servable platforms= signature=ok" {
		t.Errorf("after the signature's push event: %s, want servable", got)
	}
	if reg.lists.Load() != 0 {
		t.Errorf("%d tag list requests, want none", reg.lists.Load())
	}
}
