package snapshot

import (
	"fmt"
	"hash/fnv"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestBucketIsFNV32aOfClusterSlashChannel(t *testing.T) {
	for _, id := range []string{"a", "cluster-0001", "prod:eu-west-1.k8s", ""} {
		h := fnv.New32a()
		h.Write([]byte(id + "/stable"))
		if got, want := resolver.Bucket(id, "stable"), int(h.Sum32()%100); got != want {
			t.Errorf("Bucket(%q) = %d, want %d", id, got, want)
		}
	}
}

func TestRolloutProgress(t *testing.T) {
	pol := resolver.RolloutPolicy{Steps: []int{1, 10, 50, 100}, Interval: time.Hour}
	r := func(events ...resolver.RolloutEvent) *resolver.Rollout {
		return &resolver.Rollout{Channel: "stable", From: "1.0.0", To: "1.1.0", Steps: pol.Steps, Interval: pol.Interval, StartedAt: t0, Events: events}
	}
	ev := func(kind string, d time.Duration) resolver.RolloutEvent {
		return resolver.RolloutEvent{Kind: kind, At: at(d)}
	}
	run := func(step, pct int, next time.Duration) resolver.Progress {
		return resolver.Progress{State: resolver.RolloutRunning, Step: step, Percent: pct, NextStepAt: at(next)}
	}
	for _, tc := range []struct {
		name string
		r    *resolver.Rollout
		t    time.Duration
		want resolver.Progress
	}{
		{"starts at the first step", r(), 0, run(0, 1, time.Hour)},
		{"a step lasts one interval", r(), time.Hour - 1, run(0, 1, time.Hour)},
		{"the second step begins after one interval", r(), time.Hour, run(1, 10, 2*time.Hour)},
		{"the last step completes the rollout", r(), 3 * time.Hour, resolver.Progress{State: resolver.RolloutComplete, Step: 3, Percent: 100}},
		{"a pause holds the step and the clock", r(ev(resolver.RolloutPause, 30*time.Minute)), 10 * time.Hour,
			resolver.Progress{State: resolver.RolloutPaused, Step: 0, Percent: 1}},
		{"a resume continues the step's remaining time", r(ev(resolver.RolloutPause, 30*time.Minute), ev(resolver.RolloutResume, 2*time.Hour)), 2*time.Hour + 29*time.Minute,
			run(0, 1, 2*time.Hour+30*time.Minute)},
		{"an advance starts the next step now", r(ev(resolver.RolloutAdvance, 10*time.Minute)), 20 * time.Minute, run(1, 10, 70*time.Minute)},
		{"an advance of a paused rollout stays paused", r(ev(resolver.RolloutPause, 5*time.Minute), ev(resolver.RolloutAdvance, 10*time.Minute)), 5 * time.Hour,
			resolver.Progress{State: resolver.RolloutPaused, Step: 1, Percent: 10}},
		{"an advance to the last step completes", r(ev(resolver.RolloutAdvance, time.Minute), ev(resolver.RolloutAdvance, 2*time.Minute), ev(resolver.RolloutAdvance, 3*time.Minute)), 4 * time.Minute,
			resolver.Progress{State: resolver.RolloutComplete, Step: 3, Percent: 100}},
		{"a halt sends nobody the new version", r(ev(resolver.RolloutHalt, 90*time.Minute)), 10 * time.Hour,
			resolver.Progress{State: resolver.RolloutHalted, Step: 1, Percent: 0}},
		{"a resume after a halt returns to the step", r(ev(resolver.RolloutHalt, 90*time.Minute), ev(resolver.RolloutResume, 5*time.Hour)), 5 * time.Hour,
			run(1, 10, 5*time.Hour+30*time.Minute)},
		{"events after completion change nothing", r(ev(resolver.RolloutHalt, 4*time.Hour)), 5 * time.Hour,
			resolver.Progress{State: resolver.RolloutComplete, Step: 3, Percent: 100}},
		{"a pause of a halted rollout changes nothing", r(ev(resolver.RolloutHalt, time.Minute), ev(resolver.RolloutPause, 2*time.Minute)), time.Hour,
			resolver.Progress{State: resolver.RolloutHalted, Step: 0, Percent: 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.r.At(at(tc.t))); diff != "" {
				t.Errorf("At(+%s) (-want +got):\n%s", tc.t, diff)
			}
		})
	}
}

func TestRolloutControlRefusesWhatTheStateDoesNotAllow(t *testing.T) {
	r := &resolver.Rollout{Channel: "stable", To: "1.1.0", Steps: []int{50, 100}, Interval: time.Hour, StartedAt: t0}
	if err := r.Control(resolver.RolloutResume, t0); err == nil {
		t.Error("resume of a running rollout: no error")
	}
	if err := r.Control(resolver.RolloutHalt, t0); err != nil {
		t.Errorf("halt of a running rollout: %v", err)
	}
	if err := r.Control(resolver.RolloutPause, at(2*time.Hour)); err == nil {
		t.Error("pause of a complete rollout: no error")
	}
	if err := r.Control("rewind", t0); err == nil {
		t.Error("unknown action: no error")
	}
}

// clusters are ids with their buckets in channel "stable".
func clusters(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("cluster-%04d", i)
	}
	return out
}

// dests answers every cluster with the version its rollout sends it.
func dests(r resolver.Rollout, ids []string, t time.Time) map[string]string {
	rv := &RolloutView{Rollout: r, phase: r.Folded()}
	one, _ := resolver.MustParser(resolver.SchemeSemver, "").Parse("1.0.0")
	tag := func(v string) *resolver.Tag {
		if v == "" {
			return nil
		}
		return &resolver.Tag{Name: v, Version: one}
	}
	rv.to, rv.from = tag(r.To), tag(r.From)
	for _, l := range r.Carried {
		rv.carried = append(rv.carried, carriedTag{percent: l.Percent, tag: tag(l.Version)})
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		out[id] = rv.Dest(id, t).Name
	}
	return out
}

func TestRolloutSendsExactlyTheBucketsBelowThePercent(t *testing.T) {
	r := resolver.Rollout{Channel: "stable", From: "P", To: "N", Steps: []int{1, 10, 50, 100}, Interval: time.Hour, StartedAt: t0}
	ids := clusters(1000)
	for step, pct := range r.Steps {
		got := dests(r, ids, at(time.Duration(step)*time.Hour+time.Minute))
		for _, id := range ids {
			want := "P"
			if resolver.Bucket(id, "stable") < pct {
				want = "N"
			}
			if got[id] != want {
				t.Fatalf("step %d (%d%%): %s (bucket %d) got %s, want %s", step, pct, id, resolver.Bucket(id, "stable"), got[id], want)
			}
		}
	}
	rv := &RolloutView{Rollout: r, phase: r.Folded(), from: &resolver.Tag{Name: "P"}, to: &resolver.Tag{Name: "N"}}
	if got := rv.Dest("", at(2*time.Hour)).Name; got != "P" {
		t.Errorf("no cluster ID at 50%%: got %s, want P", got)
	}
	if got := rv.Dest("", at(3*time.Hour)).Name; got != "N" {
		t.Errorf("no cluster ID at 100%%: got %s, want N", got)
	}
}

// A new change while a rollout runs must move no cluster backward: the
// rule of NewRollout, checked over every cluster and moment.
func TestNewChangeWhileRollingOutMovesNoClusterBackward(t *testing.T) {
	pol := resolver.RolloutPolicy{Steps: []int{1, 10, 50, 100}, Interval: time.Hour}
	ids := clusters(1000)
	first := resolver.NewRollout(nil, "stable", "1.0.0", "1.1.0", pol, t0)
	change := at(90 * time.Minute) // the first rollout is at 10%
	before := dests(first, ids, change)
	second := resolver.NewRollout(&first, "stable", "1.1.0", "1.2.0", pol, change)
	if diff := cmp.Diff([]resolver.Layer{{Version: "1.1.0", Percent: 10}}, second.Carried); diff != "" {
		t.Fatalf("carried (-want +got):\n%s", diff)
	}
	if second.From != "1.0.0" {
		t.Fatalf("from = %s, want 1.0.0", second.From)
	}
	rank := map[string]int{"1.0.0": 0, "1.1.0": 1, "1.2.0": 2}
	prev := before
	for d := time.Duration(0); d <= 4*time.Hour; d += 20 * time.Minute {
		now := dests(second, ids, change.Add(d))
		for _, id := range ids {
			if rank[now[id]] < rank[prev[id]] {
				t.Fatalf("+%s: %s (bucket %d) moved back from %s to %s", d, id, resolver.Bucket(id, "stable"), prev[id], now[id])
			}
		}
		prev = now
	}
	third := resolver.NewRollout(&second, "stable", "1.2.0", "1.3.0", pol, change.Add(3*time.Hour))
	if third.From != "1.2.0" || len(third.Carried) != 0 {
		t.Errorf("after a complete rollout: from %s carried %v, want from 1.2.0 and nothing carried", third.From, third.Carried)
	}
	// Back to what the running rollout was leaving (its version was blocked,
	// then unblocked): nothing to ramp, everyone is on 1.0.0 at once.
	back := resolver.NewRollout(&first, "stable", "1.1.0", "1.0.0", pol, change)
	if back.From != "1.1.0" || back.To != "1.0.0" || len(back.Carried) != 0 || back.At(change).State != resolver.RolloutComplete {
		t.Errorf("back to the old from: %s -> %s carried %v state %s, want 1.1.0 -> 1.0.0, nothing carried, complete",
			back.From, back.To, back.Carried, back.At(change).State)
	}
	for id, v := range dests(back, ids, change) {
		if v != "1.0.0" {
			t.Fatalf("back to the old from: %s gets %s, want 1.0.0", id, v)
		}
	}
	halted := first
	halted.Events = []resolver.RolloutEvent{{Kind: resolver.RolloutHalt, At: at(80 * time.Minute)}}
	if r := resolver.NewRollout(&halted, "stable", "1.1.0", "1.2.0", pol, change); r.From != "1.0.0" || len(r.Carried) != 0 {
		t.Errorf("after a halted rollout: from %s carried %v, want from 1.0.0 and nothing carried", r.From, r.Carried)
	}
}

// A rollout's versions obey the channel's rules: a blocked N is served to
// nobody, the rollout's clusters get P instead.
func TestRolloutSkipsWhatTheChannelWouldNotServe(t *testing.T) {
	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		t.Fatal(err)
	}
	src := catalog.Source{Name: "k3s", Parser: p}
	data := catalog.SourceData{Source: src, Tags: []resolver.Tag{src.Classify("v1.33.0-k3s1"), src.Classify("v1.33.1-k3s1")}}
	ch := catalog.Channel{Name: "stable", Source: "k3s", Stream: resolver.Released, Rollout: &resolver.RolloutPolicy{Steps: []int{50, 100}, Interval: time.Hour}}
	ro := &resolver.Rollout{ID: 2, Channel: "stable", From: "v1.33.0+k3s1", To: "v1.33.1+k3s1", Steps: []int{50, 100}, Interval: time.Hour, StartedAt: time.Now()}
	states := map[string]catalog.ChannelState{"stable": {Rollout: ro}}
	in := clusterIDIn(func(b int) bool { return b < 50 })
	snap := New([]catalog.Channel{ch}, []catalog.SourceData{data}, states, time.Now())
	a, _ := snap.Channel("stable")
	if got := a.Rollout.Dest(in, time.Now()).Version.String(); got != "v1.33.1+k3s1" {
		t.Fatalf("cluster in the ring: %s, want v1.33.1+k3s1", got)
	}
	data.Blocks = []catalog.Block{{Source: "k3s", Version: "v1.33.1+k3s1"}}
	snap = New([]catalog.Channel{ch}, []catalog.SourceData{data}, states, time.Now())
	a, _ = snap.Channel("stable")
	if got := a.Rollout.Dest(in, time.Now()).Version.String(); got != "v1.33.0+k3s1" {
		t.Fatalf("cluster in the ring with N blocked: %s, want v1.33.0+k3s1", got)
	}
}

func clusterIDIn(ok func(int) bool) string {
	for i := 0; ; i++ {
		if id := fmt.Sprintf("c-%d", i); ok(resolver.Bucket(id, "stable")) {
			return id
		}
	}
}

// A block of what a rollout channel serves never starts a rollout from the
// blocked version: the channel's next answer is everyone's at once (issue
// 25 item 6: blocking k3s2 started "k3s2 -> k3s1" at 1%).
func TestABlockStartsNoRolloutFromTheBlockedVersion(t *testing.T) {
	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		t.Fatal(err)
	}
	src := catalog.Source{Name: "k3s", Parser: p}
	data := catalog.SourceData{Source: src, Tags: []resolver.Tag{src.Classify("v1.33.6-k3s1"), src.Classify("v1.33.6-k3s2")},
		Blocks: []catalog.Block{{Source: "k3s", Version: "v1.33.6+k3s2"}}}
	pol := resolver.RolloutPolicy{Steps: []int{1, 10, 100}, Interval: time.Hour}
	ch := catalog.Channel{Name: "stable", Source: "k3s", Stream: resolver.Released, Rollout: &pol}
	done := &resolver.Rollout{ID: 3, Channel: "stable", From: "v1.33.6+k3s1", To: "v1.33.6+k3s2", Steps: []int{1, 10, 100},
		Interval: time.Hour, StartedAt: time.Now().Add(-24 * time.Hour)}
	snap := New([]catalog.Channel{ch}, []catalog.SourceData{data}, map[string]catalog.ChannelState{"stable": {Rollout: done}}, time.Now())
	st, ok := snap.PendingRollout("stable")
	if !ok || st.To != "v1.33.6+k3s1" || !slices.Contains(st.Unservable, "v1.33.6+k3s2") {
		t.Fatalf("pending %+v %v, want a move to k3s1 naming k3s2 unservable", st, ok)
	}
	r := st.Begin(done, time.Now())
	if r.From != "v1.33.6+k3s1" || r.To != "v1.33.6+k3s1" || !slices.Equal(r.Steps, []int{100}) || len(r.Carried) != 0 {
		t.Errorf("rollout %s -> %s steps %v carried %v, want complete at once on k3s1 (never from the blocked k3s2)", r.From, r.To, r.Steps, r.Carried)
	}
}
