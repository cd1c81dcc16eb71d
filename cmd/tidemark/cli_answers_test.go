package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// cliGovernedConfig: v1.33 needs one approval; latest is outside its
// window (open from two hours from now, for an hour).
func cliGovernedConfig(now time.Time) string {
	start := now.UTC().Add(2 * time.Hour)
	return fmt.Sprintf(`
sources:
  - name: k3s
    image: docker.io/rancher/k3s-upgrade
    scheme: semver
    build: 'k3s(\d+)'
channels:
  - name: v1.33
    source: k3s
    latestRegexp: 'v1\.33\..*'
    excludeRegexp: '^[^+]+-'
    approvals: 1
  - name: v1.32
    source: k3s
    latestRegexp: 'v1\.32\..*'
  - name: latest
    source: k3s
    excludeRegexp: '^[^+]+-'
    windows:
      - {days: [mon, tue, wed, thu, fri, sat, sun], start: "%02d:%02d", end: "%02d:%02d", timezone: UTC}
`, start.Hour(), start.Minute(), start.Add(time.Hour).Hour(), start.Add(time.Hour).Minute())
}

// TestTheCLISaysWhatAWriteDid: a pin or unpin that waits for approvals is
// reported as pending with its change number (exit 0), never as done; a
// pin to an older version says that clusters on newer ones keep theirs
// unless --rollback, and --rollback on the same pin says it is now one;
// a pin of a channel outside its window says it is held; --at takes a
// time from now; --override-freeze reaches the server.
func TestTheCLISaysWhatAWriteDid(t *testing.T) {
	c := startServeWith(t, cliGovernedConfig(time.Now()))
	admin := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "root", "--scope", "admin")))
	bot := c.with("TIDEMARK_TOKEN", strings.TrimSpace(c.must("token", "create", "--name", "release-bot", "--scope", "promote")))

	out := bot.must("promote", "v1.33", "v1.33.5+k3s1", "--reason", "regression")
	if !regexp.MustCompile(`^change \d+: pin v1\.33 to v1\.33\.5\+k3s1 is pending \(0 of 1 approval\)\n$`).MatchString(out) {
		t.Errorf("promote on a channel needing approvals printed %q, want it pending", out)
	}
	if ch := bot.must("channels"); !regexp.MustCompile(`(?m)^v1\.33\s+k3s\s+released\s+v1\.33\.6\+k3s2\s+no\s+\S+\s+change \d+: pin v1\.33\.5\+k3s1$`).MatchString(ch) {
		t.Errorf("tidemark channels does not show v1.33 serving v1.33.6+k3s2 with the pin pending:\n%s", ch)
	}
	out = bot.must("schedule", "pin", "v1.33", "v1.33.4+k3s1", "--at", "+2h", "--reason", "later")
	if !regexp.MustCompile(`^change \d+: pin v1\.33 to v1\.33\.4\+k3s1 is pending \(0 of 1 approval\), then at \d{4}-`).MatchString(out) {
		t.Errorf("schedule --at +2h printed %q", out)
	}
	if code, _, errs := bot.run("schedule", "pin", "v1.33", "v1.33.4+k3s1", "--at", "+soon"); code == 0 || !strings.Contains(errs, "+2h") {
		t.Errorf("--at +soon: exit %d %q, want an error showing the form", code, errs)
	}

	// An older version: clusters on newer ones keep theirs.
	out = bot.must("promote", "v1.32", "v1.32.9+k3s1", "--reason", "back")
	if !strings.Contains(out, "v1.32.10+k3s1 -> v1.32.9+k3s1 (pinned); clusters already on newer versions keep theirs (add --rollback to send them down)") {
		t.Errorf("a pin to an older version printed %q", out)
	}
	out = bot.must("promote", "v1.32", "v1.32.9+k3s1", "--reason", "really back", "--rollback")
	if !strings.Contains(out, "v1.32: now a rollback pin to v1.32.9+k3s1") {
		t.Errorf("--rollback on the same pin printed %q", out)
	}

	// Outside its window: taken, and held (once the governor, which runs
	// every second, has held the channel).
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(httpGet(t, c.env["TIDEMARK_SERVER"]+"/api/v1/channels/latest"), `"held"`) {
		if time.Now().After(deadline) {
			t.Fatal("latest was never held outside its window")
		}
		time.Sleep(50 * time.Millisecond)
	}
	out = bot.must("promote", "latest", "v1.33.4+k3s1", "--reason", "tonight")
	if !strings.Contains(out, "(pinned)") || !strings.Contains(out, "held: its window is closed") {
		t.Errorf("a pin outside the window printed %q, want it pinned and held", out)
	}
	// --override-freeze reaches the server: a promoter is refused, an admin's
	// pin waits for approvals all the same.
	if code, _, errs := bot.run("promote", "v1.32", "v1.32.10+k3s1", "--reason", "x", "--override-freeze"); code == 0 || !strings.Contains(errs, "admin") {
		t.Errorf("--override-freeze by a promoter: exit %d %q, want refused naming admin", code, errs)
	}
	if out := admin.must("promote", "v1.33", "v1.33.4+k3s1", "--reason", "x", "--override-freeze"); !strings.Contains(out, "is pending (0 of 1 approval)") {
		t.Errorf("an admin's overriding pin of a channel with approvals printed %q, want pending", out)
	}
	if out := admin.must("unpin", "latest", "--override-freeze"); !strings.Contains(out, "latest: following its stream, now v1.34.1+k3s1") {
		t.Errorf("an admin's overriding unpin outside the window printed %q, want it applied at once", out)
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
