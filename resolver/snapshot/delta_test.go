package snapshot

import (
	"reflect"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestApplyMatchesAFullBuild checks that a snapshot patched with a delta
// answers exactly like one built from scratch from the same data, and that
// the sources the delta does not name are shared, not indexed again.
func TestApplyMatchesAFullBuild(t *testing.T) {
	channels := []catalog.Channel{
		{Name: "juju", Source: "jujud-operator", Stream: resolver.Released},
		{Name: "k3s", Source: "k3s-upgrade", Stream: resolver.Released},
		{Name: "k3s-pinned", Source: "k3s-upgrade", Stream: resolver.Released},
	}
	old := New(channels, []catalog.SourceData{jujuData(t), k3sData(t)}, nil, testTime)

	// The newest k3s release is blocked and a channel gets pinned.
	k3s := k3sData(t, "v1.35.1+k3s1")
	states := map[string]catalog.ChannelState{"k3s-pinned": {Pin: "v1.32.5+k3s1", Revision: 2}}
	got := old.Apply(Delta{Sources: []catalog.SourceData{k3s}, States: states}, testTime)
	want := New(channels, []catalog.SourceData{jujuData(t), k3s}, states, testTime)

	for _, c := range channels {
		g, err := got.Channel(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := want.Channel(c.Name)
		if served(g) != served(w) || g.State.Revision != w.State.Revision {
			t.Errorf("channel %s: applied serves %q (rev %d), full build serves %q (rev %d)",
				c.Name, served(g), g.State.Revision, served(w), w.State.Revision)
		}
	}
	if got.bySource["jujud-operator"] != old.bySource["jujud-operator"] {
		t.Error("the unchanged source was indexed again; want it shared with the old snapshot")
	}
	if got.bySource["k3s-upgrade"] == old.bySource["k3s-upgrade"] {
		t.Error("the changed source was not indexed again")
	}
	if a, _ := old.Channel("k3s"); served(a) != "v1.35.1+k3s1" {
		t.Errorf("Apply changed the old snapshot: k3s now serves %q", served(a))
	}
	if n := len(got.Sources()); n != 2 {
		t.Errorf("applied snapshot has %d sources, want 2", n)
	}
}

func TestApplyKeepsStatesAndChannelsItIsNotGiven(t *testing.T) {
	channels := []catalog.Channel{{Name: "k3s", Source: "k3s-upgrade", Stream: resolver.Released}}
	states := map[string]catalog.ChannelState{"k3s": {Pin: "v1.31.9+k3s1", Revision: 7}}
	old := New(channels, []catalog.SourceData{k3sData(t)}, states, testTime)
	got := old.Apply(Delta{Sources: []catalog.SourceData{k3sData(t)}}, testTime)
	a, err := got.Channel("k3s")
	if err != nil {
		t.Fatal(err)
	}
	if served(a) != "v1.31.9+k3s1" || a.State.Revision != 7 {
		t.Errorf("got %q rev %d, want the pin v1.31.9+k3s1 rev 7 kept", served(a), a.State.Revision)
	}
	renamed := old.Apply(Delta{Channels: []catalog.Channel{{Name: "other", Source: "k3s-upgrade"}}}, testTime)
	if _, err := renamed.Channel("k3s"); err == nil {
		t.Error("a channel removed from the configuration is still answered")
	}
}

func TestChangesAdd(t *testing.T) {
	var cs Changes
	if !cs.Empty() {
		t.Fatal("zero Changes is not empty")
	}
	cs.Add(Change{Source: "a"})
	cs.Add(Change{Channel: "c"})
	cs.Add(Change{Source: "a"})
	if cs.All || !cs.Channels || len(cs.Sources) != 1 || !cs.Sources["a"] {
		t.Errorf("got %+v, want source a and channel states", cs)
	}
	cs.Add(Change{All: true})
	if !cs.All {
		t.Error("All was not kept")
	}
}

func served(a ChannelAnswer) string {
	if a.Tag == nil {
		return ""
	}
	return a.Tag.Version.String()
}

// TestApplyAnswersOnlyTheChannelsItTouches checks that Apply keeps the
// answer of every channel whose source, state and configuration it did not
// change (SameAnswer), answers the others again, and that a channel soak,
// the one answer time changes, is answered again once its source is
// reloaded (which SoakEnds asks for).
func TestApplyAnswersOnlyTheChannelsItTouches(t *testing.T) {
	soak := 40 * 24 * time.Hour
	channels := []catalog.Channel{
		{Name: "juju", Source: "jujud-operator", Stream: resolver.Released},
		{Name: "k3s", Source: "k3s-upgrade", Stream: resolver.Released},
		{Name: "k3s-soaked", Source: "k3s-upgrade", Stream: resolver.Released, Soak: &soak},
	}
	old := New(channels, []catalog.SourceData{jujuData(t), k3sData(t)}, nil, testTime)
	if a, _ := old.Channel("k3s-soaked"); a.Tag != nil {
		t.Fatalf("k3s-soaked serves %s at first; want every version still soaking", served(a))
	}
	if _, ok := old.SoakEnds()["k3s-upgrade"]; !ok {
		t.Fatalf("SoakEnds = %v; want k3s-upgrade named, so that it is reloaded when the soak ends", old.SoakEnds())
	}
	later := testTime.Add(30 * 24 * time.Hour) // every k3s soak is over
	same := func(s, prev *Snapshot, want map[string]bool) {
		t.Helper()
		for name, w := range want {
			if got := s.SameAnswer(prev, name); got != w {
				t.Errorf("SameAnswer(%s) = %v, want %v", name, got, w)
			}
			if i, _ := s.ChannelIndex(name); s.SameAnswerAt(prev, i) != w {
				t.Errorf("SameAnswerAt(%d: %s) = %v, want %v", i, name, !w, w)
			}
		}
	}
	matchesFullBuild := func(s *Snapshot, data []catalog.SourceData, states map[string]catalog.ChannelState, at time.Time) {
		t.Helper()
		full := New(channels, data, states, at)
		for _, c := range channels {
			g, _ := s.Channel(c.Name)
			w, _ := full.Channel(c.Name)
			if served(g) != served(w) || g.State.Revision != w.State.Revision {
				t.Errorf("channel %s serves %q (rev %d); a full build serves %q (rev %d)",
					c.Name, served(g), g.State.Revision, served(w), w.State.Revision)
			}
		}
	}

	juju := jujuData(t, "3.6.2")
	s1 := old.Apply(Delta{Sources: []catalog.SourceData{juju}}, later)
	same(s1, old, map[string]bool{"juju": false, "k3s": true, "k3s-soaked": true})
	if a, _ := s1.Channel("k3s-soaked"); a.Tag != nil {
		t.Errorf("k3s-soaked serves %s after a change to another source; want its answer carried", served(a))
	}

	k3s := k3sData(t)
	s2 := s1.Apply(Delta{Sources: []catalog.SourceData{k3s}}, later)
	same(s2, s1, map[string]bool{"juju": true, "k3s": false, "k3s-soaked": false})
	matchesFullBuild(s2, []catalog.SourceData{juju, k3s}, nil, later)
	if a, _ := s2.Channel("k3s-soaked"); a.Tag == nil {
		t.Errorf("k3s-soaked serves nothing once its source is reloaded after the soak: %s", a.Why)
	}

	states := map[string]catalog.ChannelState{"k3s": {Pin: "v1.32.5+k3s1", Revision: 2}}
	s3 := s2.Apply(Delta{States: states}, later)
	same(s3, s2, map[string]bool{"juju": true, "k3s": false, "k3s-soaked": true})
	matchesFullBuild(s3, []catalog.SourceData{juju, k3s}, states, later)
	same(s3, old, map[string]bool{"juju": false, "k3s": false, "k3s-soaked": false})

	s4 := s3.Apply(Delta{Channels: channels}, later)
	same(s4, s3, map[string]bool{"juju": false, "k3s": false, "k3s-soaked": false})
	if !s4.SameSource(s3, "jujud-operator") || s2.SameSource(s1, "k3s-upgrade") {
		t.Error("SameSource: want a source no delta named shared, and a reloaded one not")
	}
	for i := range s2.NumSources() {
		name := s2.SourceNameAt(i)
		if s2.SameSourceAt(s1, i) != s2.SameSource(s1, name) || s4.SameSourceAt(s3, i) != s4.SameSource(s3, name) {
			t.Errorf("SameSourceAt(%d: %s) disagrees with SameSource", i, name)
		}
	}
	if fresh := New(channels, []catalog.SourceData{juju, k3s}, nil, later); fresh.SameSourceAt(s4, 0) || fresh.SameAnswerAt(s4, 0) {
		t.Error("a whole build shares a source or an answer with the snapshot before it")
	}
}

// TestSameStateComparesEveryField fails when ChannelState gains a field
// sameState does not compare: Apply would then carry a stale answer.
func TestSameStateComparesEveryField(t *testing.T) {
	typ := reflect.TypeFor[catalog.ChannelState]()
	for i := range typ.NumField() {
		var b catalog.ChannelState
		f := reflect.ValueOf(&b).Elem().Field(i)
		switch v := f.Addr().Interface().(type) {
		case *string:
			*v = "x"
		case *int64:
			*v = 1
		case *bool:
			*v = true
		case *time.Time:
			*v = testTime
		case **resolver.Rollout:
			*v = &resolver.Rollout{ID: 1}
		case **resolver.Hold:
			*v = &resolver.Hold{Version: "v1", Reason: "window"}
		default:
			t.Fatalf("ChannelState.%s: a %s; teach sameState and this test to compare it", typ.Field(i).Name, f.Type())
		}
		if sameState(catalog.ChannelState{}, b) {
			t.Errorf("sameState ignores ChannelState.%s", typ.Field(i).Name)
		}
	}
}
