package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestRolloutCommandsEndToEnd: a promotion on a rollout channel starts a
// rollout, and the rollout commands show and control it through the API.
func TestRolloutCommandsEndToEnd(t *testing.T) {
	c := startServeWith(t, strings.Replace(e2eConfig, "    excludeRegexp: '^[^+]+-'\n",
		"    excludeRegexp: '^[^+]+-'\n    rollout: {steps: [1, 10, 50, 100], interval: 1h}\n", 1))
	tok := c.must("token", "create", "--name", "release-bot", "--scope", "promote")
	bot := c.with("TIDEMARK_TOKEN", strings.TrimSpace(tok))

	if code, _, errs := c.run("rollout", "status", "v1.33"); code != 1 || !strings.Contains(errs, "404") || !strings.Contains(errs, "never rolled out") {
		t.Errorf("status before any rollout: exit %d, stderr %q", code, errs)
	}
	// The promotion says it starts a rollout, how long it takes and what a
	// request with no cluster ID gets meanwhile.
	if out := bot.must("promote", "v1.33", "v1.33.5-k3s1", "--reason", "staged"); !strings.Contains(out,
		"; a rollout starts: 1, 10, 50, 100 % of clusters, a step every 1h, all of them in 3h unless paused (tidemark rollout v1.33); until then a request with no cluster ID gets v1.33.6+k3s2\n") {
		t.Errorf("promote on a rollout channel printed %q", out)
	}
	// The channels table says it too.
	if out := c.must("channels"); !strings.Contains(out, "\nv1.33: rolling out v1.33.5+k3s1: 1 %; a request with no cluster ID gets v1.33.6+k3s2\n") {
		t.Errorf("channels during a rollout:\n%s", out)
	}
	out := c.must("rollout", "status", "v1.33")
	if !regexp.MustCompile(`(?m)^CHANNEL\s+FROM\s+TO\s+STATE\s+STEP\s+PERCENT\s+NEXT STEP\s+CLUSTERS ON TO\s+CLUSTERS ON FROM\nv1\.33\s+v1\.33\.6\+k3s2\s+v1\.33\.5\+k3s1\s+running\s+1/4\s+1%\s+\S+\s+0\s+0\n$`).MatchString(out) {
		t.Errorf("rollout status:\n%s", out)
	}
	if code, _, errs := bot.run("rollout", "pause", "v1.33"); code != 1 || !strings.Contains(errs, "--reason") {
		t.Errorf("pause without a reason: exit %d, stderr %q", code, errs)
	}
	if out := bot.must("rollout", "pause", "v1.33", "--reason", "looking"); !regexp.MustCompile(`\spaused\s+1/4\s+1%\s+-\s`).MatchString(out) {
		t.Errorf("rollout pause:\n%s", out)
	}
	if code, _, errs := bot.run("rollout", "pause", "v1.33", "--reason", "again"); code != 1 || !strings.Contains(errs, "409") {
		t.Errorf("second pause: exit %d, stderr %q", code, errs)
	}
	bot.must("rollout", "advance", "v1.33", "--reason", "canaries fine")
	bot.must("rollout", "halt", "v1.33", "--reason", "alert")
	var ro struct {
		State   string `json:"state"`
		Step    int    `json:"step"`
		Percent int    `json:"percent"`
		From    string `json:"from"`
	}
	if err := json.Unmarshal([]byte(c.must("rollout", "status", "v1.33", "-o", "json")), &ro); err != nil || ro.State != "halted" || ro.Step != 2 || ro.Percent != 0 {
		t.Errorf("status -o json after halt: %v %+v", err, ro)
	}
	if out := bot.must("rollout", "resume", "v1.33", "--reason", "fixed", "-o", "yaml"); !strings.Contains(out, "state: running") || !strings.Contains(out, "percent: 10") {
		t.Errorf("resume -o yaml:\n%s", out)
	}
	hist := c.must("history", "v1.33")
	for _, a := range []string{"rollout-start", "rollout-pause", "rollout-advance", "rollout-halt", "rollout-resume"} {
		if !strings.Contains(hist, a) {
			t.Errorf("history lacks %s:\n%s", a, hist)
		}
	}
}
