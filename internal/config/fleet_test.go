package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseFleetAndStepwise(t *testing.T) {
	yaml := base + `fleet: {retention: 7d, active_window: 30m, stuck_after: 2h, evidence_networks: [10.0.0.0/8, 192.168.1.7]}
channels:
  - name: latest
    source: k3s
    stepwise: true
    settle: 30m
`
	cfg, err := Parse("t.yaml", []byte(yaml), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Fleet.Retention != 7*24*time.Hour || cfg.Fleet.ActiveWindow != 30*time.Minute {
		t.Fatalf("fleet = %+v", cfg.Fleet)
	}
	if cfg.Fleet.StuckAfter != 2*time.Hour {
		t.Fatalf("fleet.stuck_after = %s, want 2h", cfg.Fleet.StuckAfter)
	}
	if n := cfg.Fleet.EvidenceNetworks; len(n) != 2 || n[0].String() != "10.0.0.0/8" || n[1].String() != "192.168.1.7/32" {
		t.Fatalf("fleet.evidence_networks = %v, want [10.0.0.0/8 192.168.1.7/32]", n)
	}
	if cfg.Fleet.Enrollment != "" {
		t.Fatalf("fleet.enrollment unset = %q, want off", cfg.Fleet.Enrollment)
	}
	if c := cfg.Channels[0]; !c.Stepwise || c.Settle != 30*time.Minute {
		t.Fatalf("channel = stepwise %v settle %s", c.Stepwise, c.Settle)
	}
}

func TestRolloutPolicyLoads(t *testing.T) {
	cfg, err := Parse("t.yaml", []byte(base+`channels:
  - name: stable
    source: k3s
    rollout: {steps: [1, 10, 50, 100], interval: 1h}
  - name: plain
    source: k3s
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Channels[0].Rollout
	if r == nil || len(r.Steps) != 4 || r.Steps[0] != 1 || r.Steps[3] != 100 || r.Interval != time.Hour {
		t.Fatalf("rollout = %+v", r)
	}
	if cfg.Channels[1].Rollout != nil {
		t.Fatalf("a channel without rollout: %+v", cfg.Channels[1].Rollout)
	}
}

func TestFleetEnrollmentLoads(t *testing.T) {
	for _, v := range []string{"optional", "required"} {
		cfg, err := Parse("t.yaml", []byte(base+"fleet: {enrollment: "+v+"}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Fleet.Enrollment != v {
			t.Fatalf("fleet.enrollment = %q, want %q", cfg.Fleet.Enrollment, v)
		}
	}
}

func TestDigestSaysWhetherSourcesAndChannelsAgree(t *testing.T) {
	load := func(extra string) string {
		t.Helper()
		cfg, err := Parse("t.yaml", []byte(base+extra), nil)
		if err != nil {
			t.Fatal(err)
		}
		d := cfg.Digest()
		if len(d) != 64 || strings.ToLower(d) != d {
			t.Fatalf("digest %q: want 64 lowercase hex digits", d)
		}
		return d
	}
	plain := load("channels:\n  - name: stable\n    source: k3s\n")
	if again := load("channels:\n  - name: stable\n    source: k3s\n    stream: released\n"); again != plain {
		t.Errorf("a default written out changed the digest: %s, was %s", again, plain)
	}
	if other := load("channels:\n  - name: stable\n    source: k3s\n    latest: v1.30.0+k3s1\n"); other == plain {
		t.Error("a channel's latest: changed nothing in the digest")
	}
	if other := load("fleet: {retention: 7d}\nchannels:\n  - name: stable\n    source: k3s\n"); other != plain {
		t.Error("fleet: settings changed the digest of sources and channels")
	}
}
