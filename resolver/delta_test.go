package resolver

import (
	"testing"
)

// TestApplyMatchesAFullBuild checks that a snapshot patched with a delta
// answers exactly like one built from scratch from the same data, and that
// the sources the delta does not name are shared, not indexed again.
func TestApplyMatchesAFullBuild(t *testing.T) {
	channels := []Channel{
		{Name: "juju", Source: "jujud-operator", Stream: Released},
		{Name: "k3s", Source: "k3s-upgrade", Stream: Released},
		{Name: "k3s-pinned", Source: "k3s-upgrade", Stream: Released},
	}
	old := NewSnapshot(channels, []SourceData{jujuData(t), k3sData(t)}, nil, testTime)

	// The newest k3s release is blocked and a channel gets pinned.
	k3s := k3sData(t, "v1.35.1+k3s1")
	states := map[string]ChannelState{"k3s-pinned": {Pin: "v1.32.5+k3s1", Revision: 2}}
	got := old.Apply(Delta{Sources: []SourceData{k3s}, States: states}, testTime)
	want := NewSnapshot(channels, []SourceData{jujuData(t), k3s}, states, testTime)

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
	channels := []Channel{{Name: "k3s", Source: "k3s-upgrade", Stream: Released}}
	states := map[string]ChannelState{"k3s": {Pin: "v1.31.9+k3s1", Revision: 7}}
	old := NewSnapshot(channels, []SourceData{k3sData(t)}, states, testTime)
	got := old.Apply(Delta{Sources: []SourceData{k3sData(t)}}, testTime)
	a, err := got.Channel("k3s")
	if err != nil {
		t.Fatal(err)
	}
	if served(a) != "v1.31.9+k3s1" || a.State.Revision != 7 {
		t.Errorf("got %q rev %d, want the pin v1.31.9+k3s1 rev 7 kept", served(a), a.State.Revision)
	}
	renamed := old.Apply(Delta{Channels: []Channel{{Name: "other", Source: "k3s-upgrade"}}}, testTime)
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
