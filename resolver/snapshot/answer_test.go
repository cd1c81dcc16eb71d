package snapshot

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestClusterAnswerDecidesForEverySurface: the one decision of what a
// cluster gets: a plain channel's version, a stepwise channel's next step,
// held while it settles or when no clock is kept, and a request reporting
// nothing to a stepwise channel refused.
func TestClusterAnswerDecidesForEverySurface(t *testing.T) {
	stepwise := catalog.Channel{Name: "latest", Source: "k3s-upgrade", Stream: resolver.Released, Stepwise: true, Settle: time.Hour}
	plain := catalog.Channel{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released}
	s := New([]catalog.Channel{stepwise, plain}, []catalog.SourceData{k3sData(t, "v1.32.5+k3s1")}, nil, testTime)
	a, _ := s.Channel("latest")
	reported, ok := s.Reported("latest", "v1.31.0-k3s1")
	if !ok {
		t.Fatal("v1.31.0-k3s1 does not parse")
	}
	step, err := s.NextStep("latest", reported)
	if err != nil || step.String() == reported.String() {
		t.Fatalf("fixture: next step from %s is %s (%v)", reported, step, err)
	}
	for _, tc := range []struct {
		name, channel string
		q             Asker
		want          string
		err           error
	}{
		{"a plain channel answers its version", "stable", Asker{ID: "c1", Reported: reported, HasReported: true, Now: testTime}, a.Tag.Version.String(), nil},
		{"a settled cluster gets its next step", "latest", Asker{ID: "c1", Reported: reported, HasReported: true, Now: testTime, Since: testTime.Add(-2 * time.Hour)}, step.String(), nil},
		{"a settling cluster stays", "latest", Asker{ID: "c1", Reported: reported, HasReported: true, Now: testTime, Since: testTime.Add(-time.Minute)}, reported.String(), nil},
		{"a cluster with no clock stays", "latest", Asker{ID: "c1", Reported: reported, HasReported: true, Now: testTime, Unsettled: true}, reported.String(), nil},
		{"a person asking without an ID gets the step at once", "latest", Asker{Reported: reported, HasReported: true, Now: testTime}, step.String(), nil},
		{"no reported version on a stepwise channel is refused", "latest", Asker{ID: "c1", Now: testTime}, "", ErrNoReportedVersion},
		{"an unknown channel is not found", "nope", Asker{}, "", resolver.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := s.ClusterAnswer(tc.channel, tc.q)
			got := d.Tag
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Errorf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || got.Version.String() != tc.want {
				t.Errorf("answer %s (%v), want %s", got.Version, err, tc.want)
			}
		})
	}
}

// TestAHeldClusterGetsItsOwnTag: a cluster held at the version it reports
// is answered the tag the index keeps for that version, whichever
// spelling it reported, or, for a version never indexed, a tag spelled as
// the version.
func TestAHeldClusterGetsItsOwnTag(t *testing.T) {
	stepwise := catalog.Channel{Name: "latest", Source: "k3s-upgrade", Stream: resolver.Released, Stepwise: true, Settle: time.Hour}
	s := New([]catalog.Channel{stepwise}, []catalog.SourceData{k3sData(t, "v1.32.5+k3s1")}, nil, testTime)
	for _, tc := range []struct {
		reported string
		indexed  bool
	}{
		{"v1.31.9+k3s1", true},
		{"v1.31.9-k3s1", true}, // another spelling of it
		{"v1.33.6-k3s1", true}, // two tags of one version: the one the index keeps
		{"v1.33.6+k3s1", true},
		{"v1.31.99+k3s1", false},
	} {
		reported, ok := s.Reported("latest", tc.reported)
		if !ok {
			t.Fatalf("%s does not parse", tc.reported)
		}
		want := resolver.Tag{Name: reported.String(), Version: reported, Valid: true}
		if vv, err := s.Version("k3s-upgrade", reported.String()); (err == nil) != tc.indexed {
			t.Fatalf("fixture: %s indexed: %v", tc.reported, err)
		} else if err == nil {
			want = vv.Tag
		}
		d, err := s.ClusterAnswer("latest", Asker{ID: "c1", Reported: reported, HasReported: true, Now: testTime, Unsettled: true})
		got := d.Tag
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("reporting %s: answered %+v (%v), want %+v", tc.reported, got, err, want)
		}
	}
}

// TestClusterAnswerNeverSendsAClusterDown: a cluster above the channel's
// answer keeps its version (HeldDowngrade) unless the pin is a rollback.
func TestClusterAnswerNeverSendsAClusterDown(t *testing.T) {
	ch := catalog.Channel{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released}
	data := []catalog.SourceData{k3sData(t, "v1.32.5+k3s1")}
	for _, tc := range []struct {
		name     string
		rollback bool
		held     string
	}{{"a pin keeps the cluster where it is", false, HeldDowngrade}, {"a rollback pin sends it down", true, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			base := New([]catalog.Channel{ch}, data, nil, testTime)
			vs, err := base.Versions("k3s-upgrade", resolver.Released, "")
			if err != nil || len(vs) < 2 {
				t.Fatalf("fixture: %d versions (%v)", len(vs), err)
			}
			older := vs[0].Version.String()
			s := New([]catalog.Channel{ch}, data, map[string]catalog.ChannelState{"stable": {Pin: older, Revision: 1, Rollback: tc.rollback}}, testTime)
			a, _ := s.Channel("stable")
			reported, ok := s.Reported("stable", vs[len(vs)-1].Version.String())
			if !ok || a.Tag == nil {
				t.Fatalf("fixture: reported %v, answer %v", ok, a.Tag)
			}
			d, err := s.ClusterAnswer("stable", Asker{ID: "c1", Reported: reported, HasReported: true, Now: testTime})
			got, held := d.Tag, d.Held
			want := a.Tag.Version.String()
			if tc.held != "" {
				want = reported.String()
			}
			if err != nil || held != tc.held || got.Version.String() != want {
				t.Errorf("answer %s held %q (%v), want %s held %q", got.Version, held, err, want, tc.held)
			}
		})
	}
}

// TestServableNamesOnlyWhatTheChannelMayServe: blocked, filtered out and
// newer-than-the-answer versions are left out; the pin is in.
func TestServableNamesOnlyWhatTheChannelMayServe(t *testing.T) {
	ch := catalog.Channel{Name: "stable", Source: "k3s-upgrade", Stream: resolver.Released}
	data := k3sData(t, "v1.32.5+k3s1")
	base := New([]catalog.Channel{ch}, []catalog.SourceData{data}, nil, testTime)
	all, err := base.Versions("k3s-upgrade", resolver.Released, "")
	if err != nil || len(all) < 3 {
		t.Fatalf("fixture: %d versions (%v)", len(all), err)
	}
	pin, blocked := all[len(all)-2].Version.String(), all[0].Version.String()
	data.Blocks = append(data.Blocks, catalog.Block{Source: "k3s-upgrade", Version: blocked})
	s := New([]catalog.Channel{ch}, []catalog.SourceData{data}, map[string]catalog.ChannelState{"stable": {Pin: pin, Revision: 1}}, testTime)
	got, err := s.Servable("stable")
	if err != nil || len(got) == 0 {
		t.Fatalf("Servable: %d, %v", len(got), err)
	}
	for _, v := range got {
		if v.Version.String() == blocked || v.Stream != resolver.Released || resolver.Compare(v.Version, all[len(all)-2].Version) > 0 {
			t.Errorf("lists %s (%s)", v.Version, v.Stream)
		}
	}
	if last := got[len(got)-1].Version.String(); last != pin {
		t.Errorf("newest listed %s, want the pin %s", last, pin)
	}
	if _, err := s.Servable("nope"); !errors.Is(err, resolver.ErrNotFound) {
		t.Errorf("unknown channel: %v", err)
	}
}
