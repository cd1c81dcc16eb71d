package loop

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestALoopPassesWhenKickedAndWhenItLeads: with an hour's tick only kicks
// drive it; a pass runs first when asked, at each kick worth one, and
// only while Leading; each pass is counted under the loop's name.
func TestALoopPassesWhenKickedAndWhenItLeads(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Each callback says it was asked and takes its answer from the test,
	// so that no kick is sent before the last one was taken.
	events := make(chan string)
	answer := make(chan bool)
	ask := func(what string) func() bool {
		return func() bool { events <- what; return <-answer }
	}
	kick := NewKick()
	l := Loop{Name: "test", Every: time.Hour, Kick: kick, First: true, Metrics: m,
		Leading: ask("leading"), Kicked: ask("kicked"),
		Pass: func(context.Context) { events <- "pass" }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	expect := func(want string, reply ...bool) {
		t.Helper()
		if got := <-events; got != want {
			t.Fatalf("the loop did %q, want %q", got, want)
		}
		for _, r := range reply {
			answer <- r
		}
	}
	expect("leading", true) // First
	expect("pass")
	Kick(kick)
	expect("kicked", true)
	expect("leading", true)
	expect("pass")
	Kick(kick) // not worth a pass
	expect("kicked", false)
	Kick(kick) // worth one, but another replica leads
	expect("kicked", true)
	expect("leading", false)
	Kick(kick)
	expect("kicked", true)
	expect("leading", true)
	expect("pass")
	cancel()
	<-done
	if n := testutil.ToFloat64(m.passes.WithLabelValues("test")); n != 3 {
		t.Errorf("tidemark_loop_passes_total{loop=test} = %v, want 3", n)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("a second registration of the loop metrics was not refused")
	}
}
