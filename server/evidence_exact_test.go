package server

import (
	"context"
	"fmt"
	"net/http"
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

// TestEvidenceIsExactToFiveSeconds: ten SUC-style clusters poll channel
// v1.33 every second over HTTP (fleet.active_window 8s, stuck_after 6s)
// with the leader's loop running as serve runs it. After the release six
// adopt, four stay on the older version and one of those falls silent.
// At every second (through the yank, which pins the channel back, and the
// silent cluster leaving the window) the evidence API's told, adopted and
// stuck equal what the clusters did at some instant of the last 5 s; the
// channel's yank
// (stuck over 30 % of at least 9 told) fires within 5 s of the stuck share
// crossing it, and not before.
func TestEvidenceIsExactToFiveSeconds(t *testing.T) {
	const window, stuckAfter = 8 * time.Second, 6 * time.Second
	env := newPGEnv(t, Options{})
	chs := k3sChannels()
	for i := range chs {
		if chs[i].Name == "v1.33" {
			chs[i].Yank = &catalog.YankPolicy{MaxStuckRatio: 0.3, MinTold: 9}
		}
	}
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs,
		Fleet: fleet.Options{Store: env.st, FlushEvery: time.Second, ActiveWindow: window, StuckAfter: stuckAfter}, WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	loop, err := promotion.New(promotion.Options{Store: env.st, Snapshot: func() *snapshot.Snapshot { return srv.Cur.Load().Snap },
		Applied: srv.Notify, ActiveWindow: window, StuckAfter: stuckAfter})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go loop.Run(ctx)

	const v = "v1.33.6+k3s2"
	var cl exactClusters
	pollAll := func(reported func(i int) string, silent func(i int) bool) {
		for i := range 10 {
			if silent(i) {
				continue
			}
			id := fmt.Sprintf("c-%d", i)
			at := time.Now()
			got, held := ask(t, base, "v1.33", id, reported(i))
			cl.mu.Lock()
			cl.polls = append(cl.polls, exactPoll{id: id, reported: canonical(reported(i)), answer: got, stay: held != nil, at: at})
			cl.mu.Unlock()
		}
	}
	never := func(int) bool { return false }
	if res, b := send(t, http.MethodPut, base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], `{"version":"v1.33.5+k3s1","reason":"before"}`); res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, b)
	}
	for range 2 {
		pollAll(func(int) string { return "v1.33.5-k3s1" }, never)
		time.Sleep(time.Second)
	}
	if res, b := send(t, http.MethodDelete, base+"/api/v1/channels/v1.33/pin", env.tokens["ci-promote"], ""); res.StatusCode != 200 {
		t.Fatalf("unpin: %d %s", res.StatusCode, b)
	}
	start := time.Now()
	reported := func(i int) string {
		if i < 6 && time.Since(start) > 2*time.Second {
			return "v1.33.6-k3s2"
		}
		return "v1.33.5-k3s1"
	}
	silent := func(i int) bool { return i == 9 && time.Since(start) > 3*time.Second }
	var yankedAt time.Time
	var mismatches []string
	for time.Since(start) < 16*time.Second {
		pollAll(reported, silent)
		now := time.Now()
		var ev openapi.Evidence
		getJSON(t, base+"/api/v1/channels/v1.33/evidence?version=v1.33.6-k3s2", env.tokens["root"], &ev)
		got := [3]int{ev.Told, ev.Adopted, ev.Stuck}
		ok := false
		for back := time.Duration(0); back <= 5*time.Second && !ok; back += 50 * time.Millisecond {
			ok = cl.truth(v, now.Add(-back), window, stuckAfter) == got
		}
		if !ok {
			mismatches = append(mismatches, fmt.Sprintf("at +%.1fs evidence told/adopted/stuck %v, the clusters over the last 5 s: %v .. %v",
				now.Sub(start).Seconds(), got, cl.truth(v, now.Add(-5*time.Second), window, stuckAfter), cl.truth(v, now, window, stuckAfter)))
		}
		var vj openapi.Version
		getJSON(t, base+"/api/v1/sources/k3s/versions/v1.33.6-k3s2", "", &vj)
		if vj.Held != nil && yankedAt.IsZero() {
			yankedAt = time.Now()
		}
		time.Sleep(time.Until(now.Add(time.Second)))
	}
	for _, m := range mismatches {
		t.Error(m)
	}
	// When the stuck share first crossed 30 % of at least 9 told.
	var crossed time.Time
	for at := start; at.Before(time.Now()); at = at.Add(50 * time.Millisecond) {
		if f := cl.truth(v, at, window, stuckAfter); f[0] >= 9 && float64(f[2])/float64(f[0]) > 0.3 {
			crossed = at
			break
		}
	}
	switch {
	case crossed.IsZero():
		t.Fatal("fixture: the stuck share never crossed 30 %")
	case yankedAt.IsZero():
		t.Errorf("not yanked %.1fs after the stuck share crossed 30 %%", time.Since(crossed).Seconds())
	case yankedAt.Sub(crossed) > 5*time.Second+time.Second: // +1 s: the test looks once a second
		t.Errorf("yanked %.1fs after the stuck share crossed 30 %%, want within 5 s", yankedAt.Sub(crossed).Seconds())
	case yankedAt.Before(crossed):
		t.Errorf("yanked %.1fs before the stuck share crossed 30 %%", crossed.Sub(yankedAt).Seconds())
	}
}

// canonical is a reported k3s tag as the fleet records it.
func canonical(tag string) string {
	return map[string]string{"v1.33.5-k3s1": "v1.33.5+k3s1", "v1.33.6-k3s2": "v1.33.6+k3s2"}[tag]
}
