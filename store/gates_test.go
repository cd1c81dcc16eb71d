package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

func TestGateChecksAreStoredLoadedAndNotifiedOnlyWhenChanged(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("1.0.0", "1.0.1", "1.0.2")}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetDigests(ctx, "src", map[string]string{"1.0.0": "sha256:a", "1.0.1": "sha256:b"}); err != nil {
		t.Fatal(err)
	}
	got := listen(t, st)

	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	plat := []string{"linux/amd64", "linux/arm64"}
	checks := map[string]resolver.GateChecks{
		"1.0.0": {Digest: resolver.ParseDigest("sha256:a"), Platforms: plat, KeyID: "k1", Signature: resolver.GateOK, CheckedAt: at},
		"1.0.1": {Digest: resolver.ParseDigest("sha256:b"), Platforms: plat, MissingPlatforms: []string{"linux/arm64"}, KeyID: "k1",
			Signature: resolver.GateInvalid, SignatureReason: "payload names another digest: sha256:c", CheckedAt: at},
	}
	if changed, err := st.SetGateChecks(ctx, "src", checks); err != nil || !changed {
		t.Fatalf("first checks: changed %v, %v", changed, err)
	}
	if m := next(t, got); m["kind"] != "gates" || m["source"] != "src" {
		t.Errorf("after gate checks: %v", m)
	}

	targets, err := st.GateTargets(ctx, "src", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*resolver.GateChecks{}
	for tag, c := range checks {
		want[tag] = &c
	}
	have := map[string]*resolver.GateChecks{}
	for _, tg := range targets {
		have[tg.Name] = tg.Gates
		if tg.FirstSeen.IsZero() {
			t.Errorf("target %s has no first_seen", tg.Name)
		}
	}
	// 1.0.2 has no digest yet: nothing to check.
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("gate targets (-want +got):\n%s", diff)
	}
	one, err := st.GateTargets(ctx, "src", []string{"1.0.1"})
	if err != nil || len(one) != 1 || one[0].Name != "1.0.1" || one[0].Digest.String() != "sha256:b" {
		t.Errorf("one target: %+v, %v", one, err)
	}

	data, err := st.LoadSources(ctx, []catalog.Source{source(t, "src")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range data[0].Tags {
		if diff := cmp.Diff(want[tg.Name], tg.Gates); diff != "" {
			t.Errorf("loaded gates of %s (-want +got):\n%s", tg.Name, diff)
		}
	}

	// The same results checked again later: stored, but no notification.
	again := map[string]resolver.GateChecks{}
	for tag, c := range checks {
		c.CheckedAt = at.Add(time.Hour)
		again[tag] = c
	}
	if changed, err := st.SetGateChecks(ctx, "src", again); err != nil || changed {
		t.Fatalf("the same results again: changed %v, %v", changed, err)
	}
	// Notifications arrive in commit order: the next one is this, not gates.
	if err := st.SetDigests(ctx, "src", map[string]string{"1.0.2": "sha256:d"}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, got); m["kind"] != "digests" {
		t.Errorf("an unchanged gate result notified: %v", m)
	}
	// A changed result (the signature pushed) notifies.
	c := checks["1.0.1"]
	c.Signature, c.SignatureReason = resolver.GateOK, ""
	if changed, err := st.SetGateChecks(ctx, "src", map[string]resolver.GateChecks{"1.0.1": c}); err != nil || !changed {
		t.Fatalf("a changed result: changed %v, %v", changed, err)
	}
	if m := next(t, got); m["kind"] != "gates" {
		t.Errorf("after a changed result: %v", m)
	}
}
