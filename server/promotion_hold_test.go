package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/governor"
	"github.com/tidemark-dev/tidemark/resolver"
)

// TestAFreezeDefersAPromotion: with every condition met, a freeze on the
// channel lets the promotion be recorded but holds the answer until the
// freeze ends, as for a person's scheduled change.
func TestAFreezeDefersAPromotion(t *testing.T) {
	pf := newPromotionFleet(t, 0)
	pf.clock = time.Now().Add(2 * time.Hour)
	for i := range 4 {
		pf.poll(fmt.Sprintf("c-%d", i), "v1.33.6-k3s2")
	}
	pf.flush()
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
	pf.clock = time.Now().Add(2 * time.Hour)
	for i := range 5 {
		pf.poll(fmt.Sprintf("c-%d", i), "v1.33.6-k3s2")
	}
	pf.flush()
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
