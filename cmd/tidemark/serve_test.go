package main

import (
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGHUPAppliesChannels: a channel removed from the file stops being
// served after SIGHUP, a setting only a restart applies is named in the
// log, and a broken file changes nothing.
func TestSIGHUPAppliesChannels(t *testing.T) {
	c := startServe(t)
	base := c.env["TIDEMARK_SERVER"]
	status := func(channel string) int {
		t.Helper()
		res, err := http.Get(base + "/api/v1/channels/" + channel)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	waitFor := func(channel string, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for status(channel) != want {
			if time.Now().After(deadline) {
				t.Fatalf("channel %s: status %d, want %d", channel, status(channel), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := status("latest"); got != http.StatusOK {
		t.Fatalf("before SIGHUP: channel latest answers %d, want 200", got)
	}

	path := c.env["TIDEMARK_CONFIG"]
	without := "access_log: all\n" + strings.Replace(e2eConfig, "  - name: latest\n    source: k3s\n", "", 1)
	if without == "access_log: all\n"+e2eConfig {
		t.Fatal("test config no longer has the latest channel to remove")
	}
	if err := os.WriteFile(path, []byte(without), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("latest", http.StatusNotFound)
	if logs := c.logs.String(); !strings.Contains(logs, "only a restart applies") || !strings.Contains(logs, "settings=access_log") {
		t.Errorf("no warning naming access_log after SIGHUP:\n%s", logs)
	}
	if got := status("v1.33"); got != http.StatusOK {
		t.Fatalf("after SIGHUP: channel v1.33 answers %d, want 200", got)
	}

	if err := os.WriteFile(path, []byte("channels: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// A broken file must not empty the service: give the handler time to
	// run, then check the running channels are still served.
	time.Sleep(300 * time.Millisecond)
	if got := status("v1.33"); got != http.StatusOK {
		t.Fatalf("after SIGHUP with a broken file: channel v1.33 answers %d, want 200", got)
	}
}
