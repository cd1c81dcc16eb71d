package snapshot

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// gatedData is a source with every gate: one version that passes them all,
// one missing arm64, one with an invalid signature, one still soaking.
func gatedData(t *testing.T) catalog.SourceData {
	t.Helper()
	plat := []string{"linux/amd64", "linux/arm64"}
	g := resolver.Gates{Platforms: plat, SignatureKeyFile: "cosign.pub", SignatureKeyID: "k1", Soak: 24 * time.Hour}
	d := sourceData(t, "k3s-upgrade", mustParser(t, resolver.SchemeSemver, `k3s(\d+)`),
		[]string{"v1.33.1+k3s1", "v1.33.2+k3s1", "v1.33.3+k3s1", "v1.33.4+k3s1"})
	d.Source.Gates = g
	for i := range d.Tags {
		tag := &d.Tags[i]
		c := &resolver.GateChecks{Digest: tag.Digest, Platforms: plat, KeyID: "k1", Signature: resolver.GateOK}
		tag.FirstSeen = resolver.InstantOf(testTime.Add(-100 * time.Hour))
		switch tag.Name {
		case "v1.33.2+k3s1":
			c.MissingPlatforms = []string{"linux/arm64"}
		case "v1.33.3+k3s1":
			c.Signature, c.SignatureReason = resolver.GateInvalid, "payload names another digest"
		case "v1.33.4+k3s1":
			tag.FirstSeen = resolver.InstantOf(testTime.Add(-time.Hour))
		}
		tag.Gates = c
	}
	return d
}

func TestGatedVersionsAreSkippedLikeBlocked(t *testing.T) {
	zero, long := time.Duration(0), 1000*time.Hour
	channels := []catalog.Channel{
		{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released},
		{Name: "fast", Source: "k3s-upgrade", Stream: resolver.Released, Soak: &zero},
		{Name: "slow", Source: "k3s-upgrade", Stream: resolver.Released, Soak: &long},
	}
	s := New(channels, []catalog.SourceData{gatedData(t)}, nil, testTime)

	t.Run("versions list every version with its gates", func(t *testing.T) {
		vs, err := s.Versions("k3s-upgrade", resolver.Testing, "")
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			V        string
			Servable bool
			Gates    resolver.GateState
		}
		var got []row
		for _, v := range vs {
			got = append(got, row{v.Version.String(), v.Servable, *v.Gates})
		}
		want := []row{
			{"v1.33.1+k3s1", true, resolver.GateState{Platforms: "ok", Signature: "ok", Soak: "ok"}},
			{"v1.33.2+k3s1", false, resolver.GateState{Platforms: "missing linux/arm64", Signature: "ok", Soak: "ok"}},
			{"v1.33.3+k3s1", false, resolver.GateState{Platforms: "ok", Signature: "invalid", Soak: "ok"}},
			{"v1.33.4+k3s1", false, resolver.GateState{Platforms: "ok", Signature: "ok", Soak: "until 2026-02-04T03:05:06Z"}},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("versions (-want +got):\n%s", diff)
		}
		sv, _ := s.SourceInfo("k3s-upgrade")
		if diff := cmp.Diff(map[string]int{"platforms": 1, "signature": 1, "soak": 1}, sv.HeldBy); diff != "" {
			t.Errorf("held by gate (-want +got):\n%s", diff)
		}
	})

	t.Run("channels serve the newest servable version, a channel soak in place of the source's", func(t *testing.T) {
		for ch, want := range map[string]string{"stable": "v1.33.1+k3s1", "fast": "v1.33.4+k3s1", "slow": ""} {
			a, _ := s.Channel(ch)
			if got := Served(a); got != want {
				t.Errorf("channel %s serves %q, want %q (%s)", ch, got, want, a.Why)
			}
		}
	})

	t.Run("resolve offers only servable versions and refuses a held target naming its gate", func(t *testing.T) {
		a, err := s.Resolve(Query{Channel: "stable", Current: "v1.32.0+k3s1"})
		if err != nil {
			t.Fatal(err)
		}
		if a.Target == nil || a.Target.Version.String() != "v1.33.1+k3s1" || len(a.Available) != 1 {
			t.Errorf("target %v, available %v: want v1.33.1+k3s1 alone", a.Target, a.Available)
		}
		_, err = s.Resolve(Query{Channel: "stable", Current: "v1.32.0+k3s1", Target: "v1.33.2+k3s1"})
		if !errors.Is(err, resolver.ErrUnprocessable) || !strings.Contains(err.Error(), "held by release gates (platforms missing linux/arm64)") {
			t.Errorf("held target: %v", err)
		}
	})

	t.Run("pins name the gate and force passes the soak only", func(t *testing.T) {
		for _, tc := range []struct {
			channel, version string
			force            bool
			wantMsg          string // "": the pin is planned
		}{
			{"stable", "v1.33.2+k3s1", false, `held by release gate platforms (platforms missing linux/arm64); force overrides only "soak"`},
			{"stable", "v1.33.2+k3s1", true, "held by release gate platforms"},
			{"stable", "v1.33.3+k3s1", true, "held by release gate signature (signature invalid)"},
			{"stable", "v1.33.4+k3s1", false, `held by release gate soak (soak until 2026-02-04T03:05:06Z); to pin it anyway, send "force": true`},
			{"stable", "v1.33.4+k3s1", true, ""},
			{"fast", "v1.33.4+k3s1", false, ""},
			{"slow", "v1.33.1+k3s1", false, "held by release gate soak"},
		} {
			_, err := s.PlanPin(tc.channel, tc.version, tc.force)
			switch {
			case tc.wantMsg == "" && err != nil:
				t.Errorf("pin %s to %s (force %v): %v", tc.channel, tc.version, tc.force, err)
			case tc.wantMsg != "" && (!errors.Is(err, resolver.ErrUnprocessable) || !strings.Contains(err.Error(), tc.wantMsg)):
				t.Errorf("pin %s to %s (force %v): %v, want 422 with %q", tc.channel, tc.version, tc.force, err, tc.wantMsg)
			}
		}
	})

	t.Run("a pin serves a soaking version but never an incomplete one", func(t *testing.T) {
		p := s.Apply(Delta{States: map[string]catalog.ChannelState{"stable": {Pin: "v1.33.4+k3s1"}, "fast": {Pin: "v1.33.2+k3s1"}}}, testTime)
		if a, _ := p.Channel("stable"); Served(a) != "v1.33.4+k3s1" {
			t.Errorf("stable pinned to a soaking version serves %q (%s)", Served(a), a.Why)
		}
		if a, _ := p.Channel("fast"); a.Tag != nil || !strings.Contains(a.Why, "held by release gates") {
			t.Errorf("fast pinned to a version missing arm64 serves %v (%s)", a.Tag, a.Why)
		}
	})

	t.Run("the snapshot names when the next soak ends, and a later one serves it", func(t *testing.T) {
		end := testTime.Add(23 * time.Hour)
		if diff := cmp.Diff(map[string]time.Time{"k3s-upgrade": end}, s.SoakEnds()); diff != "" {
			t.Errorf("soak ends (-want +got):\n%s", diff)
		}
		later := New(channels, []catalog.SourceData{gatedData(t)}, nil, end)
		if a, _ := later.Channel("stable"); Served(a) != "v1.33.4+k3s1" {
			t.Errorf("after the soak stable serves %q", Served(a))
		}
		// slow's own soak of 1000h still runs for every version.
		if got := later.SoakEnds()["k3s-upgrade"]; !got.Equal(testTime.Add(900 * time.Hour)) {
			t.Errorf("next soak end %v, want slow's", got)
		}
	})
}

func TestUngatedVersionsAreServableWithNullGates(t *testing.T) {
	s := New(nil, []catalog.SourceData{k3sData(t)}, nil, testTime)
	v, err := s.Version("k3s-upgrade", "v1.33.6+k3s1")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Servable || v.Gates != nil {
		t.Errorf("servable %v, gates %+v: want servable with no gates", v.Servable, v.Gates)
	}
	if len(s.SoakEnds()) != 0 {
		t.Errorf("soak ends %v without gates", s.SoakEnds())
	}
}
