package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressSaysWhatRunsAndWhatFailed: a long test is named while it
// runs, a finished package says its time, a failed test shows its output,
// and the run reports the failure.
func TestProgressSaysWhatRunsAndWhatFailed(t *testing.T) {
	now := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	var out bytes.Buffer
	p := newProgress(&out, func() time.Time { return now }, "example.com/m/")
	events := func(lines ...string) { p.read(strings.NewReader(strings.Join(lines, "\n"))) }
	for _, l := range []string{
		`{"Action":"start","Package":"example.com/m/deploy/image"}`,
		`{"Action":"run","Package":"example.com/m/deploy/image","Test":"TestMakeImage"}`,
	} {
		p.read(strings.NewReader(l))
	}
	out.Reset()
	now = now.Add(95 * time.Second)
	p.heartbeat(30 * time.Second)
	if got := out.String(); got != "... 0 packages done; running: deploy/image TestMakeImage (1m35s)\n" {
		t.Errorf("heartbeat printed %q", got)
	}
	out.Reset()
	p.heartbeat(30 * time.Second) // just said: nothing again yet
	if out.Len() != 0 {
		t.Errorf("a second heartbeat at once printed %q", out.String())
	}
	events(
		`{"Action":"run","Package":"example.com/m/server","Test":"TestX"}`,
		`{"Action":"output","Package":"example.com/m/server","Test":"TestX","Output":"    x_test.go:9: want 1, got 2\n"}`,
		`{"Action":"fail","Package":"example.com/m/server","Test":"TestX","Elapsed":0.5}`,
		`{"Action":"fail","Package":"example.com/m/server","Elapsed":3.25}`,
		`{"Action":"pass","Package":"example.com/m/deploy/image","Test":"TestMakeImage","Elapsed":95}`,
		`{"Action":"pass","Package":"example.com/m/deploy/image","Elapsed":96.5}`,
	)
	for _, want := range []string{
		"--- FAIL: server TestX (0.5s)\n    x_test.go:9: want 1, got 2\n",
		"FAIL\tserver\t3.2s\n",
		"ok  \tdeploy/image\t96.5s\n",
		"testprogress: 2 packages, FAILED\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !p.failed {
		t.Error("a failed test did not fail the run")
	}
}
