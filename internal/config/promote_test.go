package config

import (
	"strings"
	"testing"
	"time"
)

func TestPromote(t *testing.T) {
	cfg, err := Parse("t.yaml", []byte(base+`channels:
  - {name: candidate, source: k3s}
  - name: stable
    source: k3s
    promote: {from: candidate, soak: 2h, min_adopted: 20, max_stuck_ratio: 0.05}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Channels[1].Promote
	if p == nil || p.From != "candidate" || p.Soak != 2*time.Hour || p.MinAdopted != 20 || p.MaxStuckRatio != 0.05 {
		t.Fatalf("promote %+v", p)
	}
	for _, c := range []struct{ yaml, want string }{
		{"promote: {from: nope}", `promote.from: "nope" is not another channel`},
		{"promote: {from: stable}", `promote.from: "stable" is not another channel`},
		{"promote: {from: candidate, min_adopted: 0}", "promote.min_adopted: want 1 or more, got 0"},
		{"promote: {from: candidate, max_stuck_ratio: 1.5}", "promote.max_stuck_ratio: want a ratio from 0 to 1"},
		{"promote: {soak: 1h}", "promote.from: missing"},
	} {
		_, err := Parse("t.yaml", []byte(base+"channels:\n  - {name: candidate, source: k3s}\n  - name: stable\n    source: k3s\n    "+c.yaml+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.yaml, err, c.want)
		}
	}
}
