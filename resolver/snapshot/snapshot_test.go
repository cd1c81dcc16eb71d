package snapshot

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

func testSnapshot(t testing.TB, channels []catalog.Channel, states map[string]catalog.ChannelState) *Snapshot {
	return New(channels, []catalog.SourceData{jujuData(t, "2.9.11"), k3sData(t)}, states, testTime)
}

func canons(vs []resolver.VersionView) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Version.String()
	}
	return out
}

func TestVersions(t *testing.T) {
	s := testSnapshot(t, nil, nil)
	cases := []struct {
		name, source, constraint string
		stream                   resolver.Stream
		want                     []string
	}{
		{name: "juju released lists releases and builds ascending", source: "jujud-operator", stream: resolver.Released,
			want: []string{"2.8.9", "2.9.0", "2.9.10", "2.9.10.1", "2.9.11", "2.9.40", "2.9.42", "2.9.42.1", "3.0.0", "3.0.2"}},
		{name: "juju devel nests rc and beta in juju order", source: "jujud-operator", stream: resolver.Devel, constraint: ">=2.9.11-0 <3.0.1-0",
			want: []string{"2.9.11", "2.9.40", "2.9.42", "2.9.42.1", "3.0-beta1", "3.0-beta1.1", "3.0-rc1", "3.0.0"}},
		{name: "juju constraint ~2.9 on released", source: "jujud-operator", stream: resolver.Released, constraint: "~2.9",
			want: []string{"2.9.0", "2.9.10", "2.9.10.1", "2.9.11", "2.9.40", "2.9.42", "2.9.42.1"}},
		{name: "k3s testing lists one entry per canonical with builds ordered", source: "k3s-upgrade", stream: resolver.Testing,
			want: []string{"v1.31.9+k3s1", "v1.32.4+k3s1", "v1.32.5-k3s1-amd64", "v1.32.5+k3s1", "v1.33.0-rc1+k3s1", "v1.33.0+k3s1",
				"v1.33.5+k3s1", "v1.33.6+k3s1", "v1.33.6+k3s2", "v1.34.0-rc1+k3s1", "v1.34.0-rc2+k3s1", "v1.35.1+k3s1"}},
		{name: "k3s proposed drops the arch-suffixed testing tag", source: "k3s-upgrade", stream: resolver.Proposed, constraint: "~1.32 || ~1.34.0-0",
			want: []string{"v1.32.4+k3s1", "v1.32.5+k3s1", "v1.34.0-rc1+k3s1", "v1.34.0-rc2+k3s1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Versions(tc.source, tc.stream, tc.constraint)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, canons(got)); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVersionLookup(t *testing.T) {
	s := testSnapshot(t, nil, nil)
	cases := []struct {
		name, source, query string
		wantTag, wantCanon  string
		wantBlocked         bool
	}{
		{name: "canonical finds the tag spelled like it", source: "k3s-upgrade", query: "v1.33.6+k3s1", wantTag: "v1.33.6+k3s1", wantCanon: "v1.33.6+k3s1"},
		{name: "dash tag finds that exact tag", source: "k3s-upgrade", query: "v1.33.6-k3s1", wantTag: "v1.33.6-k3s1", wantCanon: "v1.33.6+k3s1"},
		{name: "rc dash tag resolves to its canonical", source: "k3s-upgrade", query: "v1.34.0-rc1-k3s1", wantTag: "v1.34.0-rc1-k3s1", wantCanon: "v1.34.0-rc1+k3s1"},
		{name: "canonical of a dash-only tag finds the dash tag", source: "k3s-upgrade", query: "v1.34.0-rc1+k3s1", wantTag: "v1.34.0-rc1-k3s1", wantCanon: "v1.34.0-rc1+k3s1"},
		{name: "blocked version is marked", source: "jujud-operator", query: "2.9.11", wantTag: "2.9.11", wantCanon: "2.9.11", wantBlocked: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Version(tc.source, tc.query)
			if err != nil {
				t.Fatal(err)
			}
			type out struct {
				Tag, Canon string
				Blocked    bool
			}
			if diff := cmp.Diff(out{tc.wantTag, tc.wantCanon, tc.wantBlocked}, out{got.Name, got.Version.String(), got.Blocked}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDuplicateCanonicalIsDeterministic(t *testing.T) {
	p := mustParser(t, resolver.SchemeSemver, `k3s(\d+)`)
	for _, order := range [][]string{{"v1.2.3-k3s1", "v1.2.3+k3s1"}, {"v1.2.3+k3s1", "v1.2.3-k3s1"}} {
		s := New(nil, []catalog.SourceData{sourceData(t, "k", p, order)}, nil, testTime)
		vs, err := s.Versions("k", resolver.Testing, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != 1 || vs[0].Name != "v1.2.3+k3s1" {
			t.Errorf("tags %v: versions %v, want the one tag v1.2.3+k3s1", order, vs)
		}
	}
	// Without a canonical spelling among the tags, the smaller name wins.
	j := mustParser(t, resolver.SchemeJuju, "")
	for _, order := range [][]string{{"02.9.1", "2.09.1"}, {"2.09.1", "02.9.1"}} {
		s := New(nil, []catalog.SourceData{sourceData(t, "j", j, order)}, nil, testTime)
		v, err := s.Version("j", "2.9.1")
		if err != nil {
			t.Fatal(err)
		}
		if v.Name != "02.9.1" {
			t.Errorf("tags %v: 2.9.1 is tag %q, want 02.9.1", order, v.Name)
		}
	}
}

func TestSnapshotErrors(t *testing.T) {
	s := testSnapshot(t, []catalog.Channel{{Name: "c", Source: "k3s-upgrade"}}, nil)
	cases := []struct {
		name    string
		call    func() error
		wantErr error
		wantMsg string
	}{
		{"unknown channel is not found", func() error { _, err := s.Channel("foo"); return err }, resolver.ErrNotFound, `not found: channel "foo"`},
		{"unknown source info is not found", func() error { _, err := s.SourceInfo("nope"); return err }, resolver.ErrNotFound, `not found: source "nope"`},
		{"versions of unknown source is not found", func() error { _, err := s.Versions("nope", resolver.Released, ""); return err }, resolver.ErrNotFound, `not found: source "nope"`},
		{"bad constraint is invalid", func() error { _, err := s.Versions("k3s-upgrade", resolver.Released, ">= banana"); return err }, resolver.ErrInvalid, `constraint ">= banana"`},
		{"unknown version is not found", func() error { _, err := s.Version("k3s-upgrade", "v9.9.9"); return err }, resolver.ErrNotFound, `not found: version "v9.9.9" of source "k3s-upgrade"`},
		{"unparsed tag is not a version", func() error { _, err := s.Version("k3s-upgrade", "latest"); return err }, resolver.ErrNotFound, `version "latest"`},
		{"eligible on unknown channel is not found", func() error { _, err := s.Eligible("foo", "v1.33.6+k3s1"); return err }, resolver.ErrNotFound, `not found: channel "foo"`},
		{"eligible rejects an rc on released", func() error { _, err := s.Eligible("c", "v1.34.0-rc2+k3s1"); return err }, resolver.ErrUnprocessable, "not served on the released stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tc.wantMsg)
			}
			if strings.Count(err.Error(), "not found") > 1 {
				t.Errorf("err = %q says \"not found\" twice", err)
			}
		})
	}
	if v, err := s.Eligible("c", "v1.33.6-k3s1"); err != nil || v.Version.String() != "v1.33.6+k3s1" {
		t.Errorf("Eligible(c, v1.33.6-k3s1) = %v, %v; want v1.33.6+k3s1, nil", v.Version, err)
	}
}

func TestSources(t *testing.T) {
	s := testSnapshot(t, []catalog.Channel{{Name: "b", Source: "k3s-upgrade"}, {Name: "a", Source: "jujud-operator"}}, nil)
	type counts struct {
		Name           string
		Tags, Unparsed int
		Streams        map[resolver.Stream]int
	}
	var got []counts
	for _, v := range s.Sources() {
		got = append(got, counts{v.Source.Name, v.Tags, v.Unparsed, v.Streams})
	}
	want := []counts{
		{"jujud-operator", 18, 3, map[resolver.Stream]int{resolver.Released: 10, resolver.Proposed: 2, resolver.Devel: 3}},
		// 15 tags: 2 unparsed, and v1.33.6-k3s1 folds into v1.33.6+k3s1.
		{"k3s-upgrade", 15, 2, map[resolver.Stream]int{resolver.Released: 8, resolver.Proposed: 3, resolver.Testing: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if _, err := s.SourceInfo("k3s-upgrade"); err != nil {
		t.Errorf("SourceInfo(k3s-upgrade): %v", err)
	}
	var names []string
	for _, a := range s.Channels() {
		names = append(names, a.Channel.Name)
	}
	if diff := cmp.Diff([]string{"b", "a"}, names); diff != "" {
		t.Errorf("Channels not in configuration order (-want +got):\n%s", diff)
	}
}
