package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// exactClusters replays what the test's clusters were told and report, to
// say what evidence should be at any instant.
type exactClusters struct {
	mu    sync.Mutex
	polls []exactPoll
}

type exactPoll struct {
	id, reported, answer string
	stay                 bool // answered held: not directed
	at                   time.Time
}

// truth is version v's told, adopted and stuck at instant at, with the
// active window and stuck_after given.
func (c *exactClusters) truth(v string, at time.Time, window, stuckAfter time.Duration) [3]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	type state struct {
		seen, since        time.Time
		directed, reported string
	}
	st := map[string]*state{}
	for _, p := range c.polls {
		if p.at.After(at) {
			break
		}
		s := st[p.id]
		if s == nil {
			s = &state{}
			st[p.id] = s
		}
		s.seen, s.reported = p.at, p.reported
		if !p.stay && p.answer != s.directed {
			s.directed, s.since = p.answer, p.at
		}
	}
	var out [3]int
	for _, s := range st {
		if s.directed != v || at.Sub(s.seen) > window {
			continue
		}
		out[0]++
		switch {
		case s.reported == v:
			out[1]++
		case at.Sub(s.since) >= stuckAfter:
			out[2]++
		}
	}
	return out
}

// exactRun is one timeline of ten SUC-style clusters polling channel
// v1.33 every second over HTTP (fleet.active_window 8s, stuck_after 6s)
// with the leader's loop running as serve runs it: the fleet is told
// v1.33.5, then the release v1.33.6+k3s2; after 2 s six adopt it, four
// stay on the older version, and one of those falls silent after 3 s.
type exactRun struct {
	cl       exactClusters
	start    time.Time // the release
	base     string
	env      *pgEnv
	mismatch []string // evidence that was not what the clusters did within 5 s
}

const exactWindow, exactStuckAfter = 8 * time.Second, 6 * time.Second

// runExact plays the timeline for 16 s on channels chs, calling each(now)
// after every second's polls.
func runExact(t *testing.T, chs []catalog.Channel, each func(r *exactRun, now time.Time)) *exactRun {
	t.Helper()
	env := newPGEnv(t, Options{})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs,
		Fleet:     fleet.Options{Store: env.st, FlushEvery: time.Second, ActiveWindow: exactWindow, StuckAfter: exactStuckAfter},
		WriteRate: 1000, WriteBurst: 1000, Governance: env.st})
	if err != nil {
		t.Fatal(err)
	}
	r := &exactRun{env: env, base: runOnLoopback(t, srv, runOpts{})}
	loop, err := promotion.New(promotion.Options{Store: env.st, Snapshot: func() *snapshot.Snapshot { return srv.Cur.Load().Snap },
		Applied: srv.Notify, ActiveWindow: exactWindow, StuckAfter: exactStuckAfter})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go loop.Run(ctx)
	pollAll := func(reported func(i int) string, silent func(i int) bool) {
		for i := range 10 {
			if silent(i) {
				continue
			}
			id := fmt.Sprintf("c-%d", i)
			at := time.Now()
			got, held := askAs(t, r.base, "v1.33", id, reported(i))
			r.cl.mu.Lock()
			r.cl.polls = append(r.cl.polls, exactPoll{id: id, reported: canonical(reported(i)), answer: got, stay: held != nil, at: at})
			r.cl.mu.Unlock()
		}
	}
	never := func(int) bool { return false }
	if res, b := send(t, http.MethodPut, r.base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], `{"version":"v1.33.5+k3s1","reason":"before"}`); res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, b)
	}
	for range 2 {
		pollAll(func(int) string { return "v1.33.5-k3s1" }, never)
		time.Sleep(time.Second)
	}
	if res, b := send(t, http.MethodDelete, r.base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], ""); res.StatusCode != 200 {
		t.Fatalf("unpin: %d %s", res.StatusCode, b)
	}
	r.start = time.Now()
	reported := func(i int) string {
		if i < 6 && time.Since(r.start) > 2*time.Second {
			return "v1.33.6-k3s2"
		}
		return "v1.33.5-k3s1"
	}
	silent := func(i int) bool { return i == 9 && time.Since(r.start) > 3*time.Second }
	for time.Since(r.start) < 16*time.Second {
		pollAll(reported, silent)
		now := time.Now()
		var ev openapi.Evidence
		getJSON(t, r.base+"/api/v1/channels/v1.33/evidence?version=v1.33.6-k3s2", env.tokens["root"], &ev)
		got := [3]int{ev.Told, ev.Adopted, ev.Stuck}
		ok := false
		for back := time.Duration(0); back <= 5*time.Second && !ok; back += 50 * time.Millisecond {
			ok = r.truth(now.Add(-back)) == got
		}
		if !ok {
			r.mismatch = append(r.mismatch, fmt.Sprintf("at +%.1fs evidence told/adopted/stuck %v, the clusters over the last 5 s: %v .. %v",
				now.Sub(r.start).Seconds(), got, r.truth(now.Add(-5*time.Second)), r.truth(now)))
		}
		each(r, now)
		time.Sleep(time.Until(now.Add(time.Second)))
	}
	return r
}

// truth is v1.33.6+k3s2's told, adopted and stuck at at.
func (r *exactRun) truth(at time.Time) [3]int {
	return r.cl.truth("v1.33.6+k3s2", at, exactWindow, exactStuckAfter)
}

// first is the first instant after the release that cond held of the
// clusters' figures; zero when never.
func (r *exactRun) first(cond func(f [3]int) bool) time.Time {
	for at := r.start; at.Before(time.Now()); at = at.Add(50 * time.Millisecond) {
		if cond(r.truth(at)) {
			return at
		}
	}
	return time.Time{}
}

// within reports whether what happened (zero: never) came within 5 s of
// when (and not before it), looking once a second.
func within(t *testing.T, what string, happened, when time.Time) {
	t.Helper()
	switch {
	case when.IsZero():
		t.Fatalf("fixture: the condition for %s never held", what)
	case happened.IsZero():
		t.Errorf("%s: not %.1fs after its condition held", what, time.Since(when).Seconds())
	case happened.Sub(when) > 5*time.Second+time.Second: // +1 s: the test looks once a second
		t.Errorf("%s %.1fs after its condition held, want within 5 s", what, happened.Sub(when).Seconds())
	case happened.Before(when):
		t.Errorf("%s %.1fs before its condition held", what, when.Sub(happened).Seconds())
	}
}

// TestEvidenceIsExactToFiveSeconds: at every second of the timeline
// (through the yank, which pins the channel back, and the silent cluster
// leaving the window) the evidence API's told, adopted and stuck equal
// what the clusters did at some instant of the last 5 s; the channel's
// yank (stuck over 30 % of at least 9 told) fires within 5 s of the stuck
// share crossing it, and not before.
func TestEvidenceIsExactToFiveSeconds(t *testing.T) {
	chs := k3sChannels()
	for i := range chs {
		if chs[i].Name == "v1.33" {
			chs[i].Yank = &catalog.YankPolicy{MaxStuckRatio: 0.3, MinTold: 9}
		}
	}
	var yankedAt time.Time
	r := runExact(t, chs, func(r *exactRun, now time.Time) {
		var vj openapi.Version
		getJSON(t, r.base+"/api/v1/sources/k3s/versions/v1.33.6-k3s2", "", &vj)
		if vj.Held != nil && yankedAt.IsZero() {
			yankedAt = now
		}
	})
	for _, m := range r.mismatch {
		t.Error(m)
	}
	within(t, "yanked", yankedAt, r.first(func(f [3]int) bool { return f[0] >= 9 && float64(f[2])/float64(f[0]) > 0.3 }))
}

// TestPromotionWithinFiveSeconds: stable-33 promotes from v1.33 (soak 4 s,
// six adopted, stuck at most 50 %) within 5 s of its last condition
// holding, and not before.
func TestPromotionWithinFiveSeconds(t *testing.T) {
	chs := promotedChannels(0)
	chs[len(chs)-1].Promote = &catalog.PromotePolicy{From: "v1.33", Soak: 4 * time.Second, MinAdopted: 6, MaxStuckRatio: 0.5}
	var promotedAt time.Time
	r := runExact(t, chs, func(r *exactRun, now time.Time) {
		if ch, _ := channel(t, &httptest.Server{URL: r.base}, "stable-33"); str(ch.Version) == "v1.33.6+k3s2" && promotedAt.IsZero() {
			promotedAt = now
		}
	})
	for _, m := range r.mismatch {
		t.Error(m)
	}
	// Told (by the unpin) at r.start, so the soak ends 4 s later.
	soaked := r.start.Add(4 * time.Second)
	ready := r.first(func(f [3]int) bool { return f[1] >= 6 && float64(f[2]) <= 0.5*float64(f[0]) })
	if ready.Before(soaked) {
		ready = soaked
	}
	within(t, "promoted", promotedAt, ready)
}

// canonical is a reported k3s tag as the fleet records it.
func canonical(tag string) string {
	return map[string]string{"v1.33.5-k3s1": "v1.33.5+k3s1", "v1.33.6-k3s2": "v1.33.6+k3s2"}[tag]
}
