package config

import (
	"testing"
	"time"
)

func TestParseFleetAndStepwise(t *testing.T) {
	yaml := base + `fleet: {retention: 7d, active_window: 30m}
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
	if c := cfg.Channels[0]; !c.Stepwise || c.Settle != 30*time.Minute {
		t.Fatalf("channel = stepwise %v settle %s", c.Stepwise, c.Settle)
	}
}
