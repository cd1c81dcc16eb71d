package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestRiskCommandsEndToEnd: risk add, list and rm through Main against a
// real serve: the resolve answer avoids the declared risk, a bad
// constraint is an error naming the field, and rm restores the answer.
func TestRiskCommandsEndToEnd(t *testing.T) {
	c := startServe(t)
	bot := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "release-bot", "--scope", "promote")))

	code, _, errs := bot.run("risk", "add", "k3s", "Bad", "--from", ">>1", "--to", "*", "--message", "m")
	if code != 1 || !strings.Contains(errs, "400:") || !strings.Contains(errs, "from") {
		t.Errorf("risk add with a bad constraint: exit %d, stderr %q", code, errs)
	}
	if out := bot.must("risk", "add", "k3s", "SkipMinor", "--from", "<1.33.0", "--to", ">=1.33.0", "--message", "needs 1.32.9 first",
		"--cluster", "^prod-"); out != "k3s risk SkipMinor: <1.33.0 -> >=1.33.0 declared\n" {
		t.Errorf("risk add printed %q", out)
	}
	out := c.must("risk", "list", "k3s")
	if !regexp.MustCompile(`(?m)^NAME\s+FROM\s+TO\s+CLUSTERS\s+BY\s+MESSAGE\nSkipMinor\s+<1\.33\.0\s+>=1\.33\.0\s+\^prod-\s+release-bot\s+needs 1\.32\.9 first\n$`).MatchString(out) {
		t.Errorf("risk list:\n%s", out)
	}
	if out := c.must("resolve", "--source", "k3s", "--current", "v1.32.0-k3s1", "-o", "json"); !strings.Contains(out, `"target": "v1.33.6+k3s2"`) &&
		!strings.Contains(out, `"target":"v1.33.6+k3s2"`) {
		t.Errorf("resolve for no cluster (the risk is for prod- clusters):\n%s", out)
	}
	if out := bot.must("risk", "rm", "k3s", "SkipMinor", "--reason", "done"); out != "k3s risk SkipMinor: removed\n" {
		t.Errorf("risk rm printed %q", out)
	}
	if code, _, errs := bot.run("risk", "rm", "k3s", "SkipMinor"); code != 1 || !strings.Contains(errs, "404:") {
		t.Errorf("risk rm of a removed risk: exit %d, stderr %q", code, errs)
	}
	if out := c.must("history", "v1.33"); !strings.Contains(out, "risk-add") || !strings.Contains(out, "risk-remove") {
		t.Errorf("history lacks the risk events:\n%s", out)
	}
}
