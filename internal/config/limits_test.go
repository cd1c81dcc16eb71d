package config

import (
	"strings"
	"testing"
	"time"
)

func TestLimits(t *testing.T) {
	cfg, err := Parse("t.yaml", []byte(base), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Limits{10000, 256, 1024, 60 * time.Second}); cfg.Limits != want {
		t.Fatalf("default limits %+v, want %+v", cfg.Limits, want)
	}
	cfg, err = Parse("t.yaml", []byte(base+"limits: {max_connections: 1, max_connections_per_address: 1, max_connections_per_network: 1, idle_timeout: 1s}\n"), nil)
	if err != nil {
		t.Fatalf("limits at their lowest: %v", err)
	}
	if want := (Limits{1, 1, 1, time.Second}); cfg.Limits != want {
		t.Fatalf("limits %+v, want %+v", cfg.Limits, want)
	}
	for _, c := range []struct{ yaml, want string }{
		{"limits: {max_connections: 0}", "limits.max_connections: want 1 or more, got 0"},
		{"limits: {max_connections_per_address: -1}", "limits.max_connections_per_address: want 1 or more, got -1"},
		{"limits: {max_connections_per_network: 0}", "limits.max_connections_per_network: want 1 or more, got 0"},
		{"limits: {max_connections: 10, max_connections_per_address: 11}", "max_connections_per_address 11 is above max_connections 10"},
		{"limits: {idle_timeout: 0s}", "limits.idle_timeout: want a positive duration"},
		{"limits: {max_conections: 5}", "max_conections"},
	} {
		_, err := Parse("t.yaml", []byte(base+c.yaml+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.yaml, err, c.want)
		}
	}
}
