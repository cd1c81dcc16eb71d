package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestGovernanceCommandsEndToEnd: schedule, changes, cancel and freeze
// through Main against a real serve: the table shows the change, a past
// time is refused naming at, a freeze refuses a pin naming itself.
func TestGovernanceCommandsEndToEnd(t *testing.T) {
	c := startServe(t)
	bot := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "release-bot", "--scope", "promote")))
	root := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "root", "--scope", "admin")))

	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	out := bot.must("schedule", "pin", "v1.33", "v1.33.5+k3s1", "--at", at, "--reason", "maintenance")
	if !regexp.MustCompile(`^change \d+: pin v1\.33\.5\+k3s1 of v1\.33 scheduled at `).MatchString(out) {
		t.Errorf("schedule printed %q", out)
	}
	id := regexp.MustCompile(`\d+`).FindString(out)
	if code, _, errs := bot.run("schedule", "pin", "v1.33", "v1.33.5+k3s1", "--at", "2020-01-01T00:00:00Z"); code != 1 || !strings.Contains(errs, "400:") || !strings.Contains(errs, "not in the future") {
		t.Errorf("schedule in the past: exit %d, stderr %q", code, errs)
	}
	if out := root.must("changes", "--state", "scheduled"); !regexp.MustCompile(`(?m)^` + id + `\s+v1\.33\s+pin\s+v1\.33\.5\+k3s1\s+\S+\s+scheduled\s+release-bot\s+-\s+-$`).MatchString(out) {
		t.Errorf("changes table:\n%s", out)
	}
	if out := bot.must("cancel", id, "--reason", "not needed"); !strings.Contains(out, "is cancelled") {
		t.Errorf("cancel printed %q", out)
	}
	if code, _, errs := bot.run("cancel", id); code != 1 || !strings.Contains(errs, "409:") {
		t.Errorf("cancel again: exit %d, stderr %q", code, errs)
	}

	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if out := root.must("freeze", "add", "--channels", "v1.*", "--until", until, "--reason", "year-end"); !strings.Contains(out, "year-end") {
		t.Errorf("freeze add printed %q", out)
	}
	if out := root.must("freeze", "list"); !strings.Contains(out, "v1.*") || !strings.Contains(out, "true") {
		t.Errorf("freeze list:\n%s", out)
	}
	if code, _, errs := bot.run("promote", "v1.33", "v1.33.5+k3s1", "--reason", "r"); code != 1 || !strings.Contains(errs, "409:") || !strings.Contains(errs, "year-end") {
		t.Errorf("promote of a frozen channel: exit %d, stderr %q", code, errs)
	}
	if out := root.must("freeze", "rm", "1"); out != "freeze 1: cancelled\n" {
		t.Errorf("freeze rm printed %q", out)
	}
}
