package snapshot

import (
	"testing"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestNextStepAgreesWithResolve checks the precomputed step table against
// the rule itself: for every indexed version of every stepwise channel's
// source, NextStep must be what Resolve's target says (or the version
// itself when the channel's version is not newer or another major).
func TestNextStepAgreesWithResolve(t *testing.T) {
	stepwise := func(c catalog.Channel) catalog.Channel { c.Stepwise = true; return c }
	channels := []catalog.Channel{
		stepwise(csChannel("latest", `.*`, "")),
		stepwise(csChannel("v1.33", `v1\.3[1-3]\..*`, `^[^+]+-`)),
		stepwise(catalog.Channel{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released, Latest: "v1.33.5+k3s1"}),
		stepwise(catalog.Channel{Name: "juju", Source: "jujud-operator", Stream: resolver.Released}),
		stepwise(catalog.Channel{Name: "juju-edge", Source: "jujud-operator", Stream: resolver.Devel, Builds: true}),
	}
	s := New(channels, []catalog.SourceData{jujuData(t, "2.9.10"), k3sData(t, "v1.32.5+k3s1")}, nil, testTime)
	checked := 0
	for _, ch := range channels {
		a, err := s.Channel(ch.Name)
		if err != nil || a.Tag == nil {
			t.Fatalf("channel %q serves nothing: %v %+v", ch.Name, err, a)
		}
		c := a.Tag.Version
		vs, err := s.Versions(ch.Source, resolver.Testing, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			r := v.Version
			want := r
			if c.Major == r.Major && resolver.Compare(c, r) > 0 {
				ans, err := s.Resolve(Query{Channel: ch.Name, Current: r.String()})
				if err != nil {
					t.Fatalf("resolve %s on %q: %v", r, ch.Name, err)
				}
				if ans.Target != nil {
					want = ans.Target.Version
				}
			}
			got, err := s.NextStep(ch.Name, r)
			if err != nil {
				t.Fatalf("NextStep(%q, %s): %v", ch.Name, r, err)
			}
			if got.String() != want.String() {
				t.Errorf("NextStep(%q, %s) = %s, want %s", ch.Name, r, got, want)
			}
			if resolver.Compare(got, r) < 0 || got.Major != r.Major {
				t.Errorf("NextStep(%q, %s) = %s: a downgrade or another major", ch.Name, r, got)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d versions", checked)
	}
}

func TestNextStepExamples(t *testing.T) {
	ch := csChannel("latest", `.*`, `-rc`)
	ch.Stepwise = true
	s := New([]catalog.Channel{ch}, []catalog.SourceData{k3sData(t)}, nil, testTime)
	a, _ := s.Channel("latest")
	for _, tc := range []struct{ name, reported, want string }{
		{"a munged tag is read as its version", "v1.30.0-k3s1", ""},
		{"the newest stays", a.Tag.Version.String(), a.Tag.Version.String()},
		{"a version above the channel is kept, never downgraded", "v1.99.0+k3s1", "v1.99.0+k3s1"},
		{"another major is kept", "v2.0.0+k3s1", "v2.0.0+k3s1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := s.Reported("latest", tc.reported)
			if !ok {
				t.Fatalf("Reported(%q) not ok", tc.reported)
			}
			got, err := s.NextStep("latest", r)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if got.Minor != r.Minor+1 && got.Minor != r.Minor {
					t.Fatalf("NextStep(%s) = %s: skips a minor", r, got)
				}
				return
			}
			if got.String() != tc.want {
				t.Fatalf("NextStep(%s) = %s, want %s", r, got, tc.want)
			}
		})
	}
	if _, ok := s.Reported("latest", "not a version"); ok {
		t.Fatal("an unparseable version counts as reported")
	}
}

// A minor with no eligible version holds clusters below it; a blocked
// version a cluster runs is never answered with an older one.
func TestNextStepHoldsAtAMinorWithNothingEligible(t *testing.T) {
	p := mustParser(t, resolver.SchemeSemver, `k3s(\d+)`)
	d := sourceData(t, "k3s-upgrade", p, []string{"v1.30.0+k3s1", "v1.30.1+k3s1", "v1.30.2+k3s1", "v1.31.0-rc1+k3s1", "v1.32.0+k3s1"}, "v1.30.2+k3s1")
	ch := catalog.Channel{Name: "latest", Source: "k3s-upgrade", Stream: resolver.Released, Stepwise: true}
	s := New([]catalog.Channel{ch}, []catalog.SourceData{d}, nil, testTime)
	for _, tc := range []struct{ reported, want string }{
		{"v1.30.0+k3s1", "v1.30.1+k3s1"},
		{"v1.30.1+k3s1", "v1.30.1+k3s1"}, // v1.30.2 is blocked, 1.31 has only an rc
		{"v1.30.2+k3s1", "v1.30.2+k3s1"},
		{"v1.31.0-rc1+k3s1", "v1.32.0+k3s1"},
	} {
		r, ok := s.Reported("latest", tc.reported)
		if !ok {
			t.Fatalf("Reported(%q) not ok", tc.reported)
		}
		if got, err := s.NextStep("latest", r); err != nil || got.String() != tc.want {
			t.Errorf("NextStep(%s) = %s, %v; want %s", tc.reported, got, err, tc.want)
		}
	}
}
