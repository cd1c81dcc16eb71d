package server

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/fleet"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

// promotedChannels: v1.33 is the candidate; "stable" answers v1.33.5 by
// its configuration and promotes itself from v1.33.
func promotedChannels(approvals int) []catalog.Channel {
	return append(k3sChannels(), catalog.Channel{Name: "stable-33", Source: "k3s", Stream: resolver.Testing,
		Include: regexp.MustCompile(`v1\.33\.5.*`), Exclude: regexp.MustCompile(`^[^+]+-`), Approvals: approvals,
		Promote: &catalog.PromotePolicy{From: "v1.33", Soak: time.Hour, MinAdopted: 3, MaxStuckRatio: 0.25}})
}

// promotionFleet serves promotedChannels(approvals) with a fleet of five
// clusters on v1.33 told v1.33.6+k3s2, and a promotion loop on a clock
// the test moves.
type promotionFleet struct {
	env   *pgEnv
	srv   *Server
	base  string
	clock time.Time
	loop  *promotion.Loop
	round func() promotion.Status
	poll  func(id, reported string)
	pin   func(method, channel, body string)
	flush func()
}

// adopted moves the promotion clock two hours on (the soak has passed, the
// fleet was told an hour ago and more) with the first n clusters
// reporting the candidate, flushed.
func (pf *promotionFleet) adopted(n int) {
	pf.clock = time.Now().Add(2 * time.Hour)
	for i := range n {
		pf.poll(fmt.Sprintf("c-%d", i), "v1.33.6-k3s2")
	}
	pf.flush()
}

func newPromotionFleet(t *testing.T, approvals int, edit ...func([]catalog.Channel)) *promotionFleet {
	t.Helper()
	chs := promotedChannels(approvals)
	for _, e := range edit {
		e(chs)
	}
	env := newPGEnv(t, Options{})
	srv, err := New(Options{Store: env.st, Data: env.st, Sources: []catalog.Source{env.src}, Channels: chs,
		Fleet: fleet.Options{Store: env.st, FlushEvery: 50 * time.Millisecond, StuckAfter: 2 * time.Minute}, Governance: env.st, WriteRate: 1000, WriteBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	pf := &promotionFleet{clock: time.Now()}
	loop, err := promotion.New(promotion.Options{Store: env.st, Snapshot: func() *snapshot.Snapshot { return srv.Cur.Load().Snap },
		Applied: srv.Notify, Now: func() time.Time { return pf.clock }, ActiveWindow: 4 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	round := func() promotion.Status {
		t.Helper()
		loop.Round(context.Background())
		if err := srv.Reload(context.Background()); err != nil {
			t.Fatal(err)
		}
		st, _ := loop.StatusOf("stable-33")
		return st
	}
	polled := map[string]time.Time{} // since the last flush: cluster -> when it asked
	poll := func(id, reported string) {
		t.Helper()
		polled[id] = time.Now()
		req, _ := http.NewRequest(http.MethodGet, base+"/v1-release/channels/v1.33", nil)
		req.Header.Set("X-SUC-Cluster-ID", id)
		req.Header.Set("X-SUC-Latest-Version", reported)
		res, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	pin := func(method, channel, body string) {
		t.Helper()
		if res, b := send(t, method, base+"/api/v1/channels/"+channel+"/pin", env.tokens["ci-promote"], body); res.StatusCode != 200 {
			t.Fatalf("%s %s: %d %s", method, channel, res.StatusCode, b)
		}
	}
	// flush waits until every poll since the last is in Postgres (the
	// recorder writes every 50 ms; a busy machine can take longer).
	flush := func() {
		t.Helper()
		awaitRecorded(t, env.st, polled)
	}
	// The fleet exists before the release, then is told it.
	pin(http.MethodPut, "v1.33", `{"version":"v1.33.5+k3s1","reason":"before"}`)
	for i := range 5 {
		poll(fmt.Sprintf("c-%d", i), "v1.33.5-k3s1")
	}
	flush()
	pin(http.MethodDelete, "v1.33", "")
	for i := range 5 {
		poll(fmt.Sprintf("c-%d", i), "v1.33.5-k3s1")
	}
	flush()
	pf.srv = srv
	pf.env, pf.base, pf.loop, pf.round, pf.poll, pf.pin, pf.flush = env, base, loop, round, poll, pin, flush
	return pf
}

// TestPromotionWaitsForEachConditionThenHappensOnce: five SUC-style
// clusters on v1.33 are told v1.33.6+k3s2; stable-33 waits for the soak,
// then for three adopters, then for the stuck share to fall under 25%,
// and then moves once, as a pin by tidemark:promotion stating the figures,
// notified as promoted. A person's pin pauses it.
func TestPromotionWaitsForEachConditionThenHappensOnce(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	env, base, round, poll, pin, flush := pf.env, pf.base, pf.round, pf.poll, pf.pin, pf.flush
	if st := round(); !strings.HasPrefix(st.Why, "soak ") || st.Target != "v1.33.6+k3s2" {
		t.Fatalf("right after the release: %+v, want the soak to wait", st)
	}
	pf.clock = time.Now().Add(2 * time.Hour) // the soak (1h) has passed; told over an hour ago
	if st := round(); st.Why != "0 of 3 adopted" {
		t.Fatalf("after the soak: %+v, want 0 of 3 adopted", st)
	}
	for i := range 3 {
		poll(fmt.Sprintf("c-%d", i), "v1.33.6-k3s2")
	}
	flush()
	if st := round(); st.Why != "stuck 40% > 25%" {
		t.Fatalf("three adopted, two stuck: %+v, want stuck 40%% > 25%%", st)
	}
	poll("c-3", "v1.33.6-k3s2")
	flush()
	if st := round(); st.Why != "" {
		t.Fatalf("four adopted, one stuck: %+v, want promoted", st)
	}
	round() // a second round promotes nothing more
	if ch, _ := channel(t, &httptest.Server{URL: base}, "stable-33"); str(ch.Version) != "v1.33.6+k3s2" {
		t.Fatalf("stable-33 serves %s after promotion", str(ch.Version))
	}
	events, _ := env.st.History(context.Background(), "stable-33")
	pins := 0
	for _, e := range events {
		if e.Action == "pin" {
			pins++
			if e.Actor != promotion.Actor || e.Reason != "promoted from v1.33: told 5, adopted 4, stuck 1" {
				t.Errorf("promotion audit %+v", e)
			}
		}
	}
	if pins != 1 {
		t.Errorf("%d promotion pins, want exactly 1", pins)
	}
	conn, err := pgx.Connect(context.Background(), env.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `select count(*) from outbox where type = 'dev.tidemark.channel.promoted' and channel = 'stable-33'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("promoted notifications: %d (%v), want 1", n, err)
	}
	if ch, _ := channel(t, &httptest.Server{URL: base}, "stable-33"); ch.Promotion == nil || ch.Promotion.Paused || ch.Promotion.From != "v1.33" {
		t.Errorf("stable-33's promotion after its own pin: %+v, want from v1.33, not paused", ch.Promotion)
	}
	// A person's pin pauses promotion, and the channel object says so.
	pin(http.MethodPut, "stable-33", `{"version":"v1.33.5+k3s1","reason":"hold it","rollback":true}`)
	if st := round(); !st.Paused {
		t.Errorf("after a person's pin: %+v, want paused", st)
	}
	if ch, _ := channel(t, &httptest.Server{URL: base}, "stable-33"); ch.Promotion == nil || !ch.Promotion.Paused {
		t.Errorf("stable-33's promotion after a person's pin: %+v, want paused", ch.Promotion)
	}
	if ch, _ := channel(t, &httptest.Server{URL: base}, "v1.33"); ch.Promotion != nil {
		t.Errorf("v1.33 promotes nothing but its object has promotion %+v", ch.Promotion)
	}
}

// TestPromotionPassesTheOneDoor: on a channel needing an approval the
// promotion is one pending change, not one a round (a freeze:
// promotion_hold_test.go).
func TestPromotionPassesTheOneDoor(t *testing.T) {
	pf := newPromotionFleet(t, 1)
	pf.adopted(4)
	first := pf.round()
	second := pf.round()
	if !strings.HasPrefix(first.Why, "change ") || first.Why != second.Why || !strings.Contains(first.Why, "waits for 1 approval") {
		t.Fatalf("with approvals: %+v then %+v, want one pending change", first, second)
	}
	cs, err := pf.env.st.Changes(context.Background(), resolver.ChangePending, 100)
	if err != nil || len(cs) != 1 || cs[0].RequestedBy != promotion.Actor || cs[0].Version != "v1.33.6+k3s2" {
		t.Fatalf("pending changes %+v (%v), want one by %s", cs, err, promotion.Actor)
	}
	if ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33"); str(ch.Version) != "v1.33.5+k3s1" {
		t.Errorf("a pending promotion moved the channel to %s", str(ch.Version))
	}
}

// TestAYankHaltsHoldsAuditsAndNotifies: v1.33 has yank: clusters told
// v1.33.6+k3s2 over an hour ago that still run v1.33.5 are stuck; past the
// ratio the channel is pinned below it (no cluster moves down), the
// version is held (no promotion takes it), audited by tidemark:evidence
// and notified as yanked; an admin lifts the hold.
func TestAYankHaltsHoldsAuditsAndNotifies(t *testing.T) {
	pf := newPromotionFleet(t, 0, func(chs []catalog.Channel) {
		for i := range chs {
			if chs[i].Name == "v1.33" {
				chs[i].Yank = &catalog.YankPolicy{MaxStuckRatio: 0.5, MinTold: 5}
			}
		}
	})
	pf.clock = time.Now().Add(2 * time.Hour)
	pf.poll("c-0", "v1.33.6-k3s2") // one adopts; four are stuck: 80% > 50%
	pf.flush()
	st := pf.round()
	if ch, _ := channel(t, &httptest.Server{URL: pf.base}, "v1.33"); str(ch.Version) == "v1.33.6+k3s2" {
		t.Fatalf("a stuck version is still v1.33's answer")
	}
	if !strings.Contains(st.Why, "held on evidence") {
		t.Errorf("stable-33's promotion to a yanked version: %+v, want held", st)
	}
	events, _ := pf.env.st.History(context.Background(), "v1.33")
	yanked := false
	for _, e := range events {
		if e.Action == "yank" && e.Actor == promotion.EvidenceActor && strings.Contains(e.Reason, "told 5, adopted 1, stuck 4") {
			yanked = true
		}
	}
	if !yanked {
		t.Errorf("no yank by %s in v1.33's history: %+v", promotion.EvidenceActor, events)
	}
	conn, err := pgx.Connect(context.Background(), pf.env.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `select count(*) from outbox where type = 'dev.tidemark.version.yanked'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("yanked notifications: %d (%v), want 1", n, err)
	}
	pf.round() // held already: nothing more
	if err := conn.QueryRow(context.Background(), `select count(*) from outbox where type = 'dev.tidemark.version.yanked'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("a second round yanked again: %d notifications", n)
	}
	heldOf := func() *openapi.Held {
		t.Helper()
		_, body := send(t, http.MethodGet, pf.base+"/api/v1/sources/k3s/versions/v1.33.6+k3s2", "", "")
		var v openapi.Version
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("version JSON: %v: %s", err, body)
		}
		return v.Held
	}
	if h := heldOf(); h == nil || h.Reason != "evidence" {
		t.Errorf("the yanked version's JSON says held %+v, want reason evidence", h)
	}
	// Someone unpins v1.33: it answers the held version again, and
	// stable-33's page says why it does not follow.
	pf.pin(http.MethodDelete, "v1.33", "")
	if _, body := send(t, http.MethodGet, pf.base+"/ui/channels/stable-33", "", ""); !strings.Contains(html.UnescapeString(string(body)),
		`<span id="promotion-why">v1.33.6+k3s2 is held on evidence (`) {
		t.Errorf("stable-33's page does not say its candidate is held")
	}
	lift := func(tok string) int {
		res, _ := send(t, http.MethodDelete, pf.base+"/api/v1/sources/k3s/versions/v1.33.6+k3s2/hold", tok, "")
		return res.StatusCode
	}
	if code := lift(pf.env.tokens["ci-promote"]); code != http.StatusForbidden {
		t.Errorf("a promoter lifting a hold: %d, want 403", code)
	}
	if code := lift(pf.env.tokens["root"]); code != http.StatusOK {
		t.Errorf("an admin lifting a hold: %d, want 200", code)
	}
	if code := lift(pf.env.tokens["root"]); code != http.StatusNotFound {
		t.Errorf("lifting a hold that is gone: %d, want 404", code)
	}
	if h := heldOf(); h != nil {
		t.Errorf("the version's JSON still says held %+v after the hold was lifted", h)
	}
}

// awaitRecorded waits until each cluster in polled (ID -> when it asked,
// on a single channel each) has a fleet record seen since, then empties
// polled: the recorder writes in batches, and a busy machine can take
// longer than its period.
func awaitRecorded(t *testing.T, st *store.Store, polled map[string]time.Time) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for id, at := range polled {
		for {
			recs, err := st.FleetCluster(context.Background(), id)
			if err == nil && len(recs) > 0 && !recs[0].LastSeen.Before(at) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster %s's poll at %v is not recorded within 10s (%v %v)", id, at, recs, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	clear(polled)
}
