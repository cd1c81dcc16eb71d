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
	all := Gates{Platforms: []string{"linux/amd64", "linux/arm64"}, SignatureKeyFile: "/etc/tidemark/cosign.pub", Soak: 24 * time.Hour}
	passed := &GateChecks{Signature: GateOK}
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
		{name: "a channel soak of 0 lifts only the soak", gates: all, checks: &GateChecks{Signature: GateInvalid}, soak: new(time.Duration),
			want: &GateState{Platforms: "ok", Signature: "invalid"}},
		{name: "a stricter channel soak holds what the source would serve", gates: Gates{Soak: time.Hour}, soak: &week,
			want: &GateState{Soak: "until 2026-11-29T05:00:00Z"}},
		{name: "a channel soak on an ungated source gates it", gates: Gates{}, soak: &week,
			want: &GateState{Soak: "until 2026-11-29T05:00:00Z"}},
		{name: "arm64 missing: held", gates: Gates{Platforms: all.Platforms}, checks: &GateChecks{MissingPlatforms: []string{"linux/arm64"}},
			want: &GateState{Platforms: "missing linux/arm64"}},
		{name: "not checked yet: every platform and the signature missing", gates: all, checks: nil, soak: &hour,
			want: &GateState{Platforms: "missing linux/amd64,linux/arm64", Signature: "missing", Soak: "ok"}},
		{name: "signature missing: held", gates: Gates{SignatureKeyFile: "k.pub"}, checks: &GateChecks{Signature: GateMissing},
			want: &GateState{Signature: "missing"}},
		{name: "soak ends exactly now: ok", gates: Gates{Soak: 6 * time.Hour}, want: &GateState{Soak: "ok"}, servable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, servable := EvaluateGates(tc.gates, tc.checks, indexed, now, tc.soak)
			if diff := cmp.Diff(tc.want, got); diff != "" || servable != tc.servable {
				t.Errorf("servable %v, want %v; state (-want +got):\n%s", servable, tc.servable, diff)
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
