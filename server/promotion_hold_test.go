package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/internal/promotion"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestAFreezeDefersAPromotion: with every condition met, a freeze on the
// channel lets the promotion be recorded but holds the answer until the
// freeze ends, as for a person's scheduled change.
func TestAFreezeDefersAPromotion(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	pf.adopted(4)
	until := time.Now().Add(3 * time.Hour)
	if _, err := pf.env.st.CreateFreeze(context.Background(), resolver.Freeze{Channels: []string{"stable-33"},
		From: time.Now().Add(-time.Hour), Until: until, Reason: "release weekend", CreatedBy: "test"}); err != nil {
		t.Fatal(err)
	}
	governor.Tick(context.Background(), pf.srv.governorOpts()) // the freeze begins: the answer is held
	st := pf.round()
	if !strings.HasPrefix(st.Why, "pinned; held until ") || !strings.Contains(st.Why, "freeze") {
		t.Fatalf("a promotion under a freeze: %+v, want pinned and held until the freeze ends", st)
	}
	ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33")
	if ch.Held == nil || ch.Held.Reason != "release weekend" || str(ch.Version) != "v1.33.5+k3s1" {
		t.Errorf("stable-33 under a freeze after a promotion: version %s held %+v, want v1.33.5+k3s1 held by the freeze", str(ch.Version), ch.Held)
	}
}

// TestAHaltBlocksAPromotion: a halt of a rollout to the candidate's
// version on the from channel (as Alertmanager's halt records it) keeps
// every channel from promoting it, whatever the other figures say.
func TestAHaltBlocksAPromotion(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	pf.adopted(5)
	conn, err := pgx.Connect(context.Background(), pf.env.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `insert into audit (actor, action, channel, source, from_version, to_version, reason)
		values ('alertmanager', 'rollout-halt', 'v1.33', 'k3s', 'v1.33.5+k3s1', 'v1.33.6+k3s2', 'alert KubeNodeNotReady firing')`); err != nil {
		t.Fatal(err)
	}
	if st := pf.round(); st.Why != "a rollout of v1.33.6+k3s2 on v1.33 was halted" {
		t.Fatalf("after a halt: %+v, want the halt to block the promotion", st)
	}
	if ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33"); str(ch.Version) != "v1.33.5+k3s1" {
		t.Errorf("stable-33 moved to %s past a halt", str(ch.Version))
	}
}

// TestAClosedWindowDefersAPromotion: with every condition met on a
// channel whose only window is closed, the promotion is recorded but the
// answer is held until the window opens.
func TestAClosedWindowDefersAPromotion(t *testing.T) {
	at := time.Now().Add(2 * time.Hour)
	var w resolver.Window
	w.Days[(at.UTC().Weekday()+3)%7] = true // a day that is neither today nor tomorrow
	w.Start, w.End, w.Location = 60, 120, time.UTC
	pf := newPromotionFleet(t, 0, func(chs []catalog.Channel) { chs[len(chs)-1].Windows = []resolver.Window{w} })
	pf.clock = at
	for i := range 4 {
		pf.poll(fmt.Sprintf("c-%d", i), "v1.33.6-k3s2")
	}
	pf.flush()
	governor.Tick(context.Background(), pf.srv.governorOpts()) // outside the window: the answer is held
	st := pf.round()
	if !strings.HasPrefix(st.Why, "pinned; held until ") || !strings.HasSuffix(st.Why, "(window)") {
		t.Fatalf("a promotion outside the window: %+v, want pinned and held until the window opens", st)
	}
	if ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33"); str(ch.Version) != "v1.33.5+k3s1" {
		t.Errorf("stable-33 moved to %s outside its window", str(ch.Version))
	}
}

// TestTwoReplicasPromoteOnce: two promotion loops that both believe they
// lead (the advisory lock changing hands) race on a ready channel: one
// pin, one notification; with approvals, one pending change.
func TestTwoReplicasPromoteOnce(t *testing.T) {
	for _, approvals := range []int{0, 1} {
		t.Run(fmt.Sprintf("approvals=%d", approvals), func(t *testing.T) {
			pf := newPromotionFleet(t, approvals)
			pf.adopted(4)
			other, err := promotion.New(promotion.Options{Store: pf.env.st, Snapshot: func() *snapshot.Snapshot { return pf.srv.Cur.Load().Snap },
				Now: func() time.Time { return pf.clock }, ActiveWindow: 4 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				var wg sync.WaitGroup
				for _, l := range []*promotion.Loop{pf.loop, other} {
					wg.Go(func() { l.Round(context.Background()) })
				}
				wg.Wait()
			}
			events, _ := pf.env.st.History(context.Background(), "stable-33")
			pins := 0
			for _, e := range events {
				if e.Action == "pin" && e.Actor == promotion.Actor {
					pins++
				}
			}
			cs, err := pf.env.st.Changes(context.Background(), resolver.ChangePending, 100)
			if err != nil {
				t.Fatal(err)
			}
			if want := 1 - approvals; pins != want || len(cs) != approvals {
				t.Errorf("two racing loops: %d promotion pins and %d pending changes, want %d and %d", pins, len(cs), want, approvals)
			}
		})
	}
}

// TestAPromotionNeverOverwritesAPinMadeSinceItsRound: a loop whose
// snapshot predates a person's pin (replicas hear of changes a moment
// later) finds the channel changed and leaves the person's pin alone.
func TestAPromotionNeverOverwritesAPinMadeSinceItsRound(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	pf.adopted(4)
	stale := pf.srv.Cur.Load().Snap
	pf.pin(http.MethodPut, "stable-33", `{"version":"v1.33.5+k3s1","reason":"hold it","rollback":true}`)
	late, err := promotion.New(promotion.Options{Store: pf.env.st, Snapshot: func() *snapshot.Snapshot { return stale },
		Now: func() time.Time { return pf.clock }, ActiveWindow: 4 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	late.Round(context.Background())
	if st, _ := late.StatusOf("stable-33"); !strings.HasPrefix(st.Why, "the channel changed since this round read it") {
		t.Errorf("a round on a stale snapshot: %+v, want it to find the channel changed", st)
	}
	if err := pf.srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33"); str(ch.Version) != "v1.33.5+k3s1" || ch.Promotion == nil || !ch.Promotion.Paused {
		t.Errorf("after a stale round stable-33 serves %s, promotion %+v: want the person's pin, paused", str(ch.Version), ch.Promotion)
	}
}

// TestAPromotionOnARolloutChannelStartsARollout: the move is a change
// like a person's pin, so a promoting channel with rollout: rolls out to
// the promoted version rather than moving every cluster at once.
func TestAPromotionOnARolloutChannelStartsARollout(t *testing.T) {
	pf := newPromotionFleet(t, 0, func(chs []catalog.Channel) {
		chs[len(chs)-1].Rollout = &resolver.RolloutPolicy{Steps: []int{10, 100}, Interval: time.Hour}
	})
	pf.adopted(4)
	if st := pf.round(); st.Why != "" {
		t.Fatalf("ready to promote: %+v", st)
	}
	ch, _ := channel(t, &httptest.Server{URL: pf.base}, "stable-33")
	if ro := ch.Rollout; ro == nil || ro.To != "v1.33.6+k3s2" || ro.From != "v1.33.5+k3s1" || ro.State != "running" || ro.Percent != 10 {
		t.Errorf("stable-33 after a promotion: rollout %+v, want running from v1.33.5+k3s1 to v1.33.6+k3s2 at 10%%", ro)
	}
}
