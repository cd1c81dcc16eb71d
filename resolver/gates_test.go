package resolver

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEvaluateGates(t *testing.T) {
	indexed := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	now := indexed.Add(6 * time.Hour)
	const digest = "sha256:aaaa"
	plat := []string{"linux/amd64", "linux/arm64"}
	all := Gates{Platforms: plat, SignatureKeyFile: "/etc/tidemark/cosign.pub", SignatureKeyID: "k1", Soak: 24 * time.Hour}
	checked := func(missing []string, sig string) *GateChecks {
		return &GateChecks{Digest: ParseDigest(digest), Platforms: plat, MissingPlatforms: missing, KeyID: "k1", Signature: sig}
	}
	passed := checked(nil, GateOK)
	hour, week := time.Hour, 7*24*time.Hour

	for _, tc := range []struct {
		name     string
		gates    Gates
		checks   *GateChecks
		soak     *time.Duration
		want     *GateState
		servable bool
	}{
		{name: "no gates: null and servable", checks: nil, want: nil, servable: true},
		{name: "all passed but soaking: held until indexed+24h", gates: all, checks: passed,
			want: &GateState{Platforms: "ok", Signature: "ok", Soak: "until 2026-11-23T05:00:00Z"}},
		{name: "a looser channel soak: servable", gates: all, checks: passed, soak: &hour,
			want: &GateState{Platforms: "ok", Signature: "ok", Soak: "ok"}, servable: true},
		{name: "a channel soak of 0 lifts only the soak", gates: all, checks: checked(nil, GateInvalid), soak: new(time.Duration),
			want: &GateState{Platforms: "ok", Signature: "invalid"}},
		{name: "a stricter channel soak holds what the source would serve", gates: Gates{Soak: time.Hour}, soak: &week,
			want: &GateState{Soak: "until 2026-11-29T05:00:00Z"}},
		{name: "a channel soak on an ungated source gates it", gates: Gates{}, soak: &week,
			want: &GateState{Soak: "until 2026-11-29T05:00:00Z"}},
		{name: "arm64 missing: held", gates: Gates{Platforms: plat}, checks: checked([]string{"linux/arm64"}, ""),
			want: &GateState{Platforms: "missing linux/arm64"}},
		{name: "not checked yet: every platform and the signature missing", gates: all, checks: nil, soak: &hour,
			want: &GateState{Platforms: "missing linux/amd64,linux/arm64", Signature: "missing", Soak: "ok"}},
		{name: "checks of the digest before a re-tag do not count", gates: all, soak: &hour,
			checks: &GateChecks{Digest: ParseDigest("sha256:old"), Platforms: plat, KeyID: "k1", Signature: GateOK},
			want:   &GateState{Platforms: "missing linux/amd64,linux/arm64", Signature: "missing", Soak: "ok"}},
		{name: "a signature checked with a rotated key does not count", gates: Gates{SignatureKeyFile: "k.pub", SignatureKeyID: "k2"},
			checks: passed, want: &GateState{Signature: "missing"}},
		{name: "a platform added since the check: held until checked", gates: Gates{Platforms: append(plat, "linux/s390x")},
			checks: passed, want: &GateState{Platforms: "missing linux/amd64,linux/arm64,linux/s390x"}},
		{name: "signature missing: held", gates: Gates{SignatureKeyFile: "k.pub", SignatureKeyID: "k1"}, checks: checked(nil, GateMissing),
			want: &GateState{Signature: "missing"}},
		{name: "soak ends exactly now: ok", gates: Gates{Soak: 6 * time.Hour}, want: &GateState{Soak: "ok"}, servable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tag := &Tag{Name: "v1", Valid: true, Digest: ParseDigest(digest), FirstSeen: InstantOf(indexed), Gates: tc.checks}
			got, servable := EvaluateGates(tc.gates, tag, now, tc.soak)
			if diff := cmp.Diff(tc.want, got); diff != "" || servable != tc.servable {
				t.Errorf("servable %v, want %v; state (-want +got):\n%s", servable, tc.servable, diff)
			}
		})
	}
}

func TestNeedsGateCheck(t *testing.T) {
	plat := []string{"linux/amd64", "linux/arm64"}
	g := Gates{Platforms: plat, SignatureKeyFile: "k.pub", SignatureKeyID: "k1", Soak: time.Hour}
	ok := &GateChecks{Digest: ParseDigest("sha256:a"), Platforms: plat, KeyID: "k1", Signature: GateOK}
	for _, tc := range []struct {
		name string
		g    Gates
		tag  Tag
		want bool
	}{
		{"passed: not asked again", g, Tag{Valid: true, Digest: ParseDigest("sha256:a"), Gates: ok}, false},
		{"never checked: asked", g, Tag{Valid: true, Digest: ParseDigest("sha256:a")}, true},
		{"re-tagged: asked", g, Tag{Valid: true, Digest: ParseDigest("sha256:b"), Gates: ok}, true},
		{"platform missing: asked on every scan", g, Tag{Valid: true, Digest: ParseDigest("sha256:a"),
			Gates: &GateChecks{Digest: ParseDigest("sha256:a"), Platforms: plat, MissingPlatforms: []string{"linux/arm64"}, KeyID: "k1", Signature: GateOK}}, true},
		{"signature invalid: asked on every scan", g, Tag{Valid: true, Digest: ParseDigest("sha256:a"),
			Gates: &GateChecks{Digest: ParseDigest("sha256:a"), Platforms: plat, KeyID: "k1", Signature: GateInvalid}}, true},
		{"digest unknown: not yet", g, Tag{Valid: true}, false},
		{"not a version: never", g, Tag{Digest: ParseDigest("sha256:a")}, false},
		{"soak only: nothing to ask the registry", Gates{Soak: time.Hour}, Tag{Valid: true, Digest: ParseDigest("sha256:a")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NeedsGateCheck(tc.g, &tc.tag); got != tc.want {
				t.Errorf("NeedsGateCheck = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGateStateHeld(t *testing.T) {
	if got := (*GateState)(nil).Held(); got != nil {
		t.Errorf("nil state holds %v", got)
	}
	st := &GateState{Platforms: "missing linux/arm64", Signature: "ok", Soak: "until 2026-11-23T05:00:00Z"}
	if diff := cmp.Diff([]string{"platforms", "soak"}, st.Held()); diff != "" {
		t.Errorf("Held (-want +got):\n%s", diff)
	}
}

func TestGatesValidate(t *testing.T) {
	if err := (Gates{Platforms: []string{"linux/amd64", "linux/arm/v7"}, Soak: time.Hour}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Gates{
		{Platforms: []string{"linux"}},
		{Platforms: []string{"linux//v7"}},
		{Platforms: []string{"linux/arm/v7/x"}},
		{Platforms: []string{"windows/amd64:10.0"}},
		{Soak: -time.Hour},
	} {
		err := bad.Validate()
		if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line wrapping ErrInvalid", bad, err)
			continue
		}
		if len(bad.Platforms) > 0 && !strings.Contains(err.Error(), `"`+bad.Platforms[0]+`"`) {
			t.Errorf("error %q does not name %q", err, bad.Platforms[0])
		}
	}
}
