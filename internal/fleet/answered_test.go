package fleet

import (
	"testing"
	"time"
)

// TestLastAnswered: the newest answer per (channel, cluster) is kept (a
// late, older sighting does not replace it), channels and clusters are
// apart, and the sweep forgets what the active window left behind.
func TestLastAnswered(t *testing.T) {
	a := newAnswered()
	t0 := time.Unix(1_800_000_000, 0).UnixNano()
	a.put("stable", "c1", "2.0.1", t0+2)
	a.put("stable", "c1", "2.0.0", t0+1) // older sighting, taken later
	a.put("edge", "c1", "3.0.0", t0)
	a.put("stable", "c2", "1.0.0", t0-int64(2*time.Hour))
	for _, c := range []struct{ ch, id, want string }{{"stable", "c1", "2.0.1"}, {"edge", "c1", "3.0.0"}, {"stable", "c2", "1.0.0"}} {
		if got, ok := a.get(c.ch, c.id); !ok || got != c.want {
			t.Errorf("%s/%s: %q %v, want %q", c.ch, c.id, got, ok, c.want)
		}
	}
	if _, ok := a.get("stable", "nobody"); ok {
		t.Error("an unknown cluster has an answer")
	}
	a.sweep(t0 - int64(time.Hour))
	if _, ok := a.get("stable", "c2"); ok {
		t.Error("a cluster silent past the window was not forgotten")
	}
	if _, ok := a.get("stable", "c1"); !ok {
		t.Error("an active cluster was forgotten")
	}
}
