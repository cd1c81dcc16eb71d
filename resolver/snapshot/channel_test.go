package snapshot

import (
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// channelCase is one channel evaluated over one source state.
type channelCase struct {
	name       string
	ch         catalog.Channel
	blocked    []string
	pin        string
	want       string // canonical served; "" for nothing
	wantTag    string // raw tag served, when it differs from want
	wantPinned bool
}

// channelView is what the golden file records of an answer.
type channelView struct {
	Version string `json:"version"`
	Tag     string `json:"tag"`
	Pinned  bool   `json:"pinned"`
	Why     string `json:"why,omitempty"`
}

func TestChannelAnswers(t *testing.T) {
	const exclPre = `^[^+]+-`
	juju := func(name string, s resolver.Stream) catalog.Channel {
		return catalog.Channel{Name: name, Source: "jujud-operator", Stream: s}
	}
	withInclude := func(c catalog.Channel, re string) catalog.Channel { c.Include = regexp.MustCompile(re); return c }
	withBuilds := func(c catalog.Channel) catalog.Channel { c.Builds = true; return c }
	withConstraint := func(c catalog.Channel, cs string) catalog.Channel {
		c.Constraint, c.ConstraintText = testutil.Constraint(t, cs), cs
		return c
	}
	withLatest := func(c catalog.Channel, v string) catalog.Channel { c.Latest = v; return c }
	jujuPre := withInclude(juju("3.0-pre", resolver.Devel), `^3\.0-`)

	cases := []channelCase{
		// juju streams over jujud-operator tags
		{name: "released serves the newest release, not a build", ch: juju("released", resolver.Released), want: "3.0.2"},
		{name: "proposed prefers a release over an older rc", ch: juju("proposed", resolver.Proposed), want: "3.0.2"},
		{name: "constraint ~2.9 serves 2.9.42", ch: withConstraint(juju("2.9", resolver.Released), "~2.9"), want: "2.9.42"},
		{name: "constraint ~2.9 with builds serves the build 2.9.42.1", ch: withBuilds(withConstraint(juju("2.9", resolver.Released), "~2.9")), want: "2.9.42.1"},
		{name: "constraint ~2.9 on devel still skips 3.0 pre-releases", ch: withConstraint(juju("2.9", resolver.Devel), "~2.9"), want: "2.9.42"},
		{name: "devel serves rc over beta (tags compare as strings)", ch: jujuPre, want: "3.0-rc1"},
		{name: "devel falls back to beta when the rc is blocked", ch: jujuPre, blocked: []string{"3.0-rc1"}, want: "3.0-beta1"},
		{name: "devel with builds serves the beta build", ch: withBuilds(jujuPre), blocked: []string{"3.0-rc1"}, want: "3.0-beta1.1"},
		{name: "proposed with the only rc blocked serves nothing", ch: withInclude(juju("3.0-rc", resolver.Proposed), `^3\.0-`), blocked: []string{"3.0-rc1"}},
		{name: "blocked newest release falls back to the previous", ch: juju("released", resolver.Released), blocked: []string{"3.0.2"}, want: "3.0.0"},
		{name: "pin fixes the answer below the newest", ch: juju("released", resolver.Released), pin: "2.9.40", want: "2.9.40", wantPinned: true},
		{name: "latest from config acts as a pin", ch: withLatest(juju("released", resolver.Released), "2.9.11"), want: "2.9.11", wantPinned: true},
		{name: "pin wins over latest", ch: withLatest(juju("released", resolver.Released), "2.9.11"), pin: "2.9.40", want: "2.9.40", wantPinned: true},
		{name: "pin to an ineligible version is served (a forced pin)", ch: juju("released", resolver.Released), pin: "3.0-rc1", want: "3.0-rc1", wantPinned: true},
		{name: "pin to a blocked version serves nothing", ch: juju("released", resolver.Released), pin: "2.9.40", blocked: []string{"2.9.40"}, wantPinned: true},
		{name: "pin to a version not indexed serves nothing", ch: juju("released", resolver.Released), pin: "2.9.41", wantPinned: true},

		// channelserver channels (rke2/k3s channels.yaml regexps) over k3s tags
		{name: "latest-style channel serves newest release", ch: csChannel("latest", `.*`, `(^[^+]+-|v1\.25\.5\+k3s1)`), want: "v1.35.1+k3s1"},
		{name: "minor channel prefers +k3s2 over +k3s1", ch: csChannel("v1.33", `v1\.33\..*`, exclPre), want: "v1.33.6+k3s2"},
		{name: "minor channel falls back to +k3s1 when +k3s2 is blocked", ch: csChannel("v1.33", `v1\.33\..*`, exclPre), blocked: []string{"v1.33.6+k3s2"}, want: "v1.33.6+k3s1"},
		{name: "exclude regexp drops one named release", ch: csChannel("v1.33", `v1\.33\..*`, `(^[^+]+-|v1\.33\.6\+k3s2)`), want: "v1.33.6+k3s1"},
		{name: "minor channel with only release candidates serves nothing", ch: csChannel("v1.34", `v1\.34\..*`, exclPre)},
		{name: "arch-suffixed tag is a pre-release and excluded", ch: csChannel("v1.32", `v1\.32\..*`, exclPre), want: "v1.32.5+k3s1"},
		{name: "testing channel serves the newest rc", ch: csChannel("testing", `-(alpha|beta|rc)`, ""), want: "v1.34.0-rc2+k3s1"},
		{name: "stable latest spelled as canonical", ch: withLatest(csChannel("stable", "", ""), "v1.33.6+k3s1"), want: "v1.33.6+k3s1", wantPinned: true},
		{name: "stable latest spelled as the dash tag serves that tag", ch: withLatest(csChannel("stable", "", ""), "v1.33.6-k3s1"), want: "v1.33.6+k3s1", wantTag: "v1.33.6-k3s1", wantPinned: true},
		{name: "released stream without regexps skips rcs and arch tags", ch: catalog.Channel{Name: "rel", Source: "k3s-upgrade"}, want: "v1.35.1+k3s1"},
		{name: "constraint ~1.32 serves v1.32.5+k3s1", ch: withConstraint(catalog.Channel{Name: "c", Source: "k3s-upgrade"}, "~1.32"), want: "v1.32.5+k3s1"},
		{name: "constraint with pre-release serves an rc", ch: withConstraint(catalog.Channel{Name: "c", Source: "k3s-upgrade", Stream: resolver.Proposed}, ">=1.34.0-0 <1.35.0"), want: "v1.34.0-rc2+k3s1"},
		{name: "unknown source serves nothing", ch: catalog.Channel{Name: "x", Source: "nope"}},
	}
	views := map[string]channelView{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := []catalog.SourceData{jujuData(t, tc.blocked...), k3sData(t, tc.blocked...)}
			states := map[string]catalog.ChannelState{}
			if tc.pin != "" {
				states[tc.ch.Name] = catalog.ChannelState{Pin: tc.pin, Revision: 3}
			}
			s := New([]catalog.Channel{tc.ch}, data, states, testTime)
			got, err := s.Channel(tc.ch.Name)
			if err != nil {
				t.Fatalf("Channel(%q): %v", tc.ch.Name, err)
			}
			wantTag := tc.wantTag
			if wantTag == "" {
				wantTag = tc.want
			}
			gotTag := ""
			if got.Tag != nil {
				gotTag = got.Tag.Name
			}
			type outcome struct {
				Version, Tag string
				Pinned       bool
			}
			if diff := cmp.Diff(outcome{tc.want, wantTag, tc.wantPinned}, outcome{canon(got.Tag), gotTag, got.Pinned}); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if (got.Tag == nil) == (got.Why == "") {
				t.Errorf("Why = %q with Tag %v: want Why exactly when nothing is served", got.Why, got.Tag)
			}
			views[tc.name] = channelView{Version: canon(got.Tag), Tag: gotTag, Pinned: got.Pinned, Why: got.Why}
		})
	}
	golden(t, "channels", views)
}

// TestFilterReasonsAgree guards against ok and whyNot drifting apart: every
// rejection must come with a reason, every acceptance without one.
func TestFilterReasonsAgree(t *testing.T) {
	data := []catalog.SourceData{jujuData(t, "2.9.40", "3.0-rc1"), k3sData(t, "v1.33.6+k3s2")}
	s := New(nil, data, nil, testTime)
	filters := []catalog.Filter{
		{Stream: resolver.Released},
		{Stream: resolver.Devel},
		{Stream: resolver.Testing, Builds: true},
		catalog.ChannelFilter(&catalog.Channel{Name: "c", Stream: resolver.Proposed, Constraint: testutil.Constraint(t, "~2.9 || ~1.33"), ConstraintText: "~2.9 || ~1.33"}, testTime),
		catalog.ChannelFilter(&catalog.Channel{Name: "r", Stream: resolver.Testing, Include: regexp.MustCompile(`\.3`), Exclude: regexp.MustCompile(`^[^+]+-`)}, testTime),
	}
	for _, idx := range s.sources {
		all := append(slices.Clone(idx.versions), idx.others...)
		for i := range all {
			v := &all[i]
			for fi, f := range filters {
				ok, why := f.OK(v), f.WhyNot(v)
				if ok != (why == "") {
					t.Errorf("filter %d on %s %q: ok=%v but whyNot=%q", fi, idx.view.Source.Name, v.Name, ok, why)
				}
			}
		}
	}
}

func TestPickMatchesSnapshot(t *testing.T) {
	d := k3sData(t)
	c := csChannel("v1.33", `v1\.33\..*`, `^[^+]+-`)
	s := New([]catalog.Channel{c}, []catalog.SourceData{d}, nil, testTime)
	vs, err := s.Versions("k3s-upgrade", resolver.Testing, "")
	if err != nil {
		t.Fatal(err)
	}
	i := catalog.Pick(&c, vs)
	if i < 0 {
		t.Fatal("Pick found nothing; want v1.33.6+k3s2")
	}
	a, _ := s.Channel("v1.33")
	if got, want := vs[i].Version.String(), canon(a.Tag); got != want {
		t.Errorf("Pick = %s, snapshot answer = %s: want the same", got, want)
	}
	if got := catalog.Pick(&c, nil); got != -1 {
		t.Errorf("Pick over no versions = %d, want -1", got)
	}
}
