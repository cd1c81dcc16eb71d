package snapshot

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// answerView is what the golden file records of a resolve answer.
type answerView struct {
	Current   string   `json:"current,omitempty"`
	Stream    string   `json:"stream,omitempty"`
	Available []string `json:"available,omitempty"`
	Target    string   `json:"target,omitempty"`
	Path      []string `json:"path,omitempty"`
	Reason    string   `json:"reason,omitempty"`
	Error     string   `json:"error,omitempty"`
}

func tagCanons(ts []resolver.Tag) []string {
	var out []string
	for i := range ts {
		out = append(out, ts[i].Version.String())
	}
	return out
}

func TestResolve(t *testing.T) {
	stream := func(s resolver.Stream) *resolver.Stream { return &s }
	channels := []catalog.Channel{
		csChannel("v1.33", `v1\.33\..*`, `^[^+]+-`),
		{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Testing, Latest: "v1.33.6+k3s1"},
		{Name: "2.9", Source: "jujud-operator", Stream: resolver.Released, Constraint: testutil.Constraint(t, "~2.9"), ConstraintText: "~2.9"},
		{Name: "edge", Source: "jujud-operator", Stream: resolver.Devel, Builds: true},
	}
	s := New(channels, []catalog.SourceData{jujuData(t, "2.9.10"), k3sData(t)}, nil, testTime)

	const juju, k3s = "jujud-operator", "k3s-upgrade"
	cases := []struct {
		name       string
		q          Query
		wantTarget string
		wantPath   []string
		wantErr    error
	}{
		// juju
		{name: "2.9.40 upgrades to 2.9.42 and names 3.0 as another major",
			q: Query{Source: juju, Current: "2.9.40"}, wantTarget: "2.9.42", wantPath: []string{"2.9.42"}},
		{name: "2.9.42 has no upgrade because 3.0 is another major", q: Query{Source: juju, Current: "2.9.42"}},
		{name: "newest release has no upgrades available", q: Query{Source: juju, Current: "3.0.2"}},
		{name: "2.8.9 goes to the next minor's newest", q: Query{Source: juju, Current: "2.8.9"}, wantTarget: "2.9.42", wantPath: []string{"2.9.42"}},
		{name: "current with a build number is offered builds", q: Query{Source: juju, Current: "2.9.10.1"}, wantTarget: "2.9.42.1", wantPath: []string{"2.9.42.1"}},
		{name: "builds asked for are offered", q: Query{Source: juju, Current: "2.9.11", Builds: true}, wantTarget: "2.9.42.1", wantPath: []string{"2.9.42.1"}},
		{name: "devel stream offers only the same major", q: Query{Source: juju, Current: "2.9.40", Stream: stream(resolver.Devel)}, wantTarget: "2.9.42", wantPath: []string{"2.9.42"}},
		{name: "a beta on devel moves to the newest of its minor", q: Query{Source: juju, Current: "3.0-beta1", Stream: stream(resolver.Devel)}, wantTarget: "3.0.2", wantPath: []string{"3.0.2"}},
		{name: "channel with builds follows its devel stream", q: Query{Channel: "edge", Current: "3.0-beta1"}, wantTarget: "3.0.2", wantPath: []string{"3.0.2"}},
		{name: "version never indexed is parsed and answered", q: Query{Source: juju, Current: "2.9.20"}, wantTarget: "2.9.42", wantPath: []string{"2.9.42"}},
		{name: "blocked current still gets an answer", q: Query{Source: juju, Current: "2.9.10"}, wantTarget: "2.9.42", wantPath: []string{"2.9.42"}},
		{name: "unparseable current is invalid", q: Query{Source: juju, Current: "2.9"}, wantErr: resolver.ErrInvalid},
		{name: "empty current is invalid", q: Query{Source: juju}, wantErr: resolver.ErrInvalid},
		{name: "target older than current is a refused downgrade", q: Query{Source: juju, Current: "2.9.40", Target: "2.9.11"}, wantErr: resolver.ErrUnprocessable},
		{name: "target equal to current is a refused downgrade", q: Query{Source: juju, Current: "2.9.40", Target: "2.9.40"}, wantErr: resolver.ErrUnprocessable},
		{name: "target in another major is refused", q: Query{Source: juju, Current: "2.9.42", Target: "3.0.0"}, wantErr: resolver.ErrUnprocessable},
		{name: "target not indexed is not found", q: Query{Source: juju, Current: "2.9.40", Target: "2.9.99"}, wantErr: resolver.ErrNotFound},
		{name: "target that is a build is refused without builds", q: Query{Source: juju, Current: "2.9.40", Target: "2.9.42.1"}, wantErr: resolver.ErrUnprocessable},
		{name: "blocked target is refused", q: Query{Source: juju, Current: "2.9.0", Target: "2.9.10"}, wantErr: resolver.ErrUnprocessable},
		{name: "target rc on released is refused", q: Query{Source: juju, Current: "2.8.9", Target: "2.9-rc1"}, wantErr: resolver.ErrUnprocessable},
		{name: "target of the current minor is accepted", q: Query{Source: juju, Current: "2.9.0", Target: "2.9.40"}, wantTarget: "2.9.40", wantPath: []string{"2.9.40"}},
		{name: "constraint channel keeps 2.9 clients on 2.9", q: Query{Channel: "2.9", Current: "2.8.9"}, wantTarget: "2.9.42", wantPath: []string{"2.9.42"}},

		// k3s
		{name: "k3s goes one minor at a time and stops before a minor with no release",
			q: Query{Source: k3s, Current: "v1.31.9+k3s1"}, wantTarget: "v1.32.5+k3s1", wantPath: []string{"v1.32.5+k3s1", "v1.33.6+k3s2"}},
		{name: "skipping a minor is refused naming the step",
			q: Query{Source: k3s, Current: "v1.31.9+k3s1", Target: "v1.33.6+k3s2"}, wantErr: resolver.ErrUnprocessable},
		{name: "target of the next minor starts the path, past the current minor's newer patch",
			q: Query{Source: k3s, Current: "v1.32.4+k3s1", Target: "v1.33.5+k3s1"}, wantTarget: "v1.33.5+k3s1", wantPath: []string{"v1.33.5+k3s1"}},
		{name: "k3s2 beats k3s1 in the current minor",
			q: Query{Source: k3s, Current: "v1.33.0+k3s1"}, wantTarget: "v1.33.6+k3s2", wantPath: []string{"v1.33.6+k3s2"}},
		{name: "current given as a dash tag is its canonical version",
			q: Query{Source: k3s, Current: "v1.33.6-k3s1"}, wantTarget: "v1.33.6+k3s2", wantPath: []string{"v1.33.6+k3s2"}},
		{name: "newest of a minor with a gap after it has no upgrade", q: Query{Source: k3s, Current: "v1.33.6+k3s2"}},
		{name: "proposed stream offers the next minor's rc",
			q: Query{Source: k3s, Current: "v1.33.6+k3s2", Stream: stream(resolver.Proposed)}, wantTarget: "v1.34.0-rc2+k3s1", wantPath: []string{"v1.34.0-rc2+k3s1", "v1.35.1+k3s1"}},
		{name: "minor channel offers only its minor",
			q: Query{Channel: "v1.33", Current: "v1.32.4+k3s1"}, wantTarget: "v1.33.6+k3s2", wantPath: []string{"v1.33.6+k3s2"}},
		{name: "pinned channel caps the offer at its pin",
			q: Query{Channel: "stable", Current: "v1.33.0+k3s1"}, wantTarget: "v1.33.6+k3s1", wantPath: []string{"v1.33.6+k3s1"}},
		{name: "target above a channel pin is refused",
			q: Query{Channel: "stable", Current: "v1.33.0+k3s1", Target: "v1.33.6+k3s2"}, wantErr: resolver.ErrUnprocessable},
		{name: "arch-suffixed current is a testing pre-release of its patch",
			q: Query{Source: k3s, Current: "v1.32.5-k3s1-amd64"}, wantTarget: "v1.33.6+k3s2", wantPath: []string{"v1.33.6+k3s2"}},

		// lookups
		{name: "unknown source is not found", q: Query{Source: "nope", Current: "1.0.0"}, wantErr: resolver.ErrNotFound},
		{name: "unknown channel is not found", q: Query{Channel: "nope", Current: "1.0.0"}, wantErr: resolver.ErrNotFound},
		{name: "channel of another source is invalid", q: Query{Source: juju, Channel: "v1.33", Current: "2.9.0"}, wantErr: resolver.ErrInvalid},
	}
	views := map[string]answerView{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := s.Resolve(tc.q)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				views[tc.name] = answerView{Error: err.Error()}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			type outcome struct {
				Target string
				Path   []string
			}
			if diff := cmp.Diff(outcome{tc.wantTarget, tc.wantPath}, outcome{canon(a.Target), tagCanons(a.Path)}); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			checkAnswerInvariants(t, s, a)
			views[tc.name] = answerView{
				Current: a.Current.String(), Stream: a.Stream.String(), Available: tagCanons(a.Available),
				Target: canon(a.Target), Path: tagCanons(a.Path), Reason: a.Reason,
			}
		})
	}
	golden(t, "resolve", views)
}

// checkAnswerInvariants holds for every answer: never a downgrade, never
// another major, the path ascending without stepping over a minor that has
// versions, starting at the target,
// and the contract's reason when there is nothing newer.
func checkAnswerInvariants(t *testing.T, s *Snapshot, a Answer) {
	t.Helper()
	for _, v := range a.Available {
		if resolver.Compare(v.Version, a.Current) <= 0 || v.Version.Major != a.Current.Major {
			t.Errorf("available %s: not newer than %s or another major", v.Version, a.Current)
		}
	}
	// skipped is the first minor of the source's versions strictly between
	// two versions of the current major: one a client would step over.
	all, err := s.Versions(a.Source, resolver.Testing, "")
	if err != nil {
		t.Fatal(err)
	}
	skipped := func(from, to resolver.Version) (int, bool) {
		for _, v := range all {
			if v.Version.Major == from.Major && v.Version.Minor > from.Minor && v.Version.Minor < to.Minor {
				return v.Version.Minor, true
			}
		}
		return 0, false
	}
	for i := range a.Path {
		if i == 0 {
			continue
		}
		prev, cur := a.Path[i-1].Version, a.Path[i].Version
		if cur.Minor <= prev.Minor {
			t.Errorf("path %v: %s does not follow %s with a newer minor", tagCanons(a.Path), cur, prev)
		}
		if m, ok := skipped(prev, cur); ok {
			t.Errorf("path %v: %s to %s steps over minor %d, which has versions", tagCanons(a.Path), prev, cur, m)
		}
	}
	if a.Target == nil {
		if len(a.Path) != 0 {
			t.Errorf("no target but path %v", tagCanons(a.Path))
		}
		if !strings.HasPrefix(a.Reason, noUpgrades) {
			t.Errorf("reason = %q without a target, want it to start %q", a.Reason, noUpgrades)
		}
		return
	}
	if m, ok := skipped(a.Current, a.Target.Version); ok {
		t.Errorf("target %s skips minor %d from %s", a.Target.Version, m, a.Current)
	}
	if len(a.Path) == 0 || a.Path[0].Version.String() != a.Target.Version.String() {
		t.Errorf("path %v does not start at target %s", tagCanons(a.Path), a.Target.Version)
	}
}

// TestResolveStepsOverMinorsThatNeverShipped: a minor with no version at all
// (juju never shipped 3.2 or 3.3 here) is not a skip; a minor that exists,
// even only as a beta, is one a client must pass through.
func TestResolveStepsOverMinorsThatNeverShipped(t *testing.T) {
	p := mustParser(t, resolver.SchemeJuju, "")
	gap := New(nil, []catalog.SourceData{sourceData(t, "juju", p, []string{"3.1.0", "3.1.8", "3.4.0", "3.4.6", "3.5.5", "4.0.0"})}, nil, testTime)
	withBeta := New(nil, []catalog.SourceData{sourceData(t, "juju", p, []string{"3.1.8", "3.2-beta1", "3.4.6"})}, nil, testTime)
	cases := []struct {
		name       string
		snap       *Snapshot
		q          Query
		wantTarget string
		wantPath   []string
		wantErr    error
	}{
		{name: "3.1 goes to 3.4 when 3.2 and 3.3 never shipped", snap: gap, q: Query{Source: "juju", Current: "3.1.8"},
			wantTarget: "3.4.6", wantPath: []string{"3.4.6", "3.5.5"}},
		{name: "asking for 3.4 from 3.1 is not a skip", snap: gap, q: Query{Source: "juju", Current: "3.1.0", Target: "3.4.0"},
			wantTarget: "3.4.0", wantPath: []string{"3.4.0", "3.5.5"}},
		{name: "asking for 3.5 from 3.1 skips 3.4", snap: gap, q: Query{Source: "juju", Current: "3.1.8", Target: "3.5.5"}, wantErr: resolver.ErrUnprocessable},
		{name: "a beta-only minor still has to be passed through", snap: withBeta, q: Query{Source: "juju", Current: "3.1.8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.snap.Resolve(tc.q)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := canon(a.Target); got != tc.wantTarget {
				t.Errorf("target %q, want %q (reason %q)", got, tc.wantTarget, a.Reason)
			}
			if diff := cmp.Diff(tc.wantPath, tagCanons(a.Path)); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			checkAnswerInvariants(t, tc.snap, a)
		})
	}
}
