package store_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
)

func noBackoff(int) time.Duration { return 0 }

// drain delivers to endpoint until nothing is due, returning what was sent.
// drain delivers endpoint's events until want have been sent (or 10 s
// pass), then checks nothing more is due. Deliveries wait for every older
// transaction on the server to end (the outbox horizon), and tests of other
// packages share the server: an empty answer may only mean "not yet".
func drain(t *testing.T, st *store.Store, endpoint string, f resolver.EventFilter, want int) []resolver.Event {
	t.Helper()
	var sent []resolver.Event
	send := func(_ context.Context, e resolver.Event) error {
		sent = append(sent, e)
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(sent) < want && time.Now().Before(deadline) {
		_, ok, err := st.DeliverNext(context.Background(), endpoint, f, send, noBackoff)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, ok, err := st.DeliverNext(context.Background(), endpoint, f, send, noBackoff); ok || err != nil {
		t.Errorf("after %d events another was due (%v)", want, err)
	}
	return sent
}

// deliverNext is DeliverNext retried while the horizon holds its event back.
func deliverNext(t *testing.T, st *store.Store, endpoint string, f resolver.EventFilter,
	send func(context.Context, resolver.Event) error, backoff func(int) time.Duration) (resolver.Delivery, bool, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, ok, err := st.DeliverNext(context.Background(), endpoint, f, send, backoff)
		if ok || err != nil || time.Now().After(deadline) {
			return d, ok, err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWritesAddOutboxEventsInTheirTransaction(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	if err := st.StartCursor(ctx, "hook"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Source: "src", Version: "2.9.1", Actor: "alice", Reason: "go", IfRevision: resolver.AnyRevision, From: "2.9.0"}); err != nil {
		t.Fatal(err)
	}
	// A pin that does not move what is served records no event.
	if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: "edge", Source: "src", Version: "3.0.0", Actor: "alice", IfRevision: resolver.AnyRevision, From: "3.0.0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Unpin(ctx, resolver.ChannelChange{Channel: "stable", Source: "src", Actor: "bob", Reason: "back", IfRevision: resolver.AnyRevision, To: "2.9.2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Block(ctx, "src", "2.9.2", "carol", "CVE"); err != nil {
		t.Fatal(err)
	}
	// A refused write leaves no event behind.
	if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Source: "src", Version: "2.9.2", Actor: "dan", IfRevision: resolver.AnyRevision}); !errors.Is(err, resolver.ErrUnprocessable) && err == nil {
		t.Fatal("pin of a blocked version succeeded")
	}
	got := drain(t, st, "hook", resolver.EventFilter{}, 3)
	want := []resolver.Event{
		{Type: resolver.EventChannelChanged, Channel: "stable", Source: "src", From: "2.9.0", To: "2.9.1", Actor: "alice", Reason: "go"},
		{Type: resolver.EventChannelChanged, Channel: "stable", Source: "src", From: "2.9.1", To: "2.9.2", Actor: "bob", Reason: "back"},
		{Type: resolver.EventVersionBlocked, Source: "src", To: "2.9.2", Actor: "carol", Reason: "CVE"},
	}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(resolver.Event{}, "ID", "XID", "At")); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}

func TestDeliverNextRetriesAndResumes(t *testing.T) {
	st, u := newStore(t, "src")
	ctx := context.Background()
	if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "old"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.StartCursor(ctx, "hook"); err != nil {
		t.Fatal(err)
	}
	events := []resolver.Event{
		{Type: resolver.EventChannelChanged, Channel: "a", To: "1"},
		{Type: resolver.EventChannelChanged, Channel: "b", To: "1"},
		{Type: resolver.EventVersionBlocked, Source: "src", To: "1"},
		{Type: resolver.EventVersionBlocked, Source: "other", To: "1"},
	}
	if err := st.AddEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	f := resolver.EventFilter{Channels: []string{"a"}, Sources: []string{"src"}}
	if n, err := st.Backlog(ctx, "hook", f); err != nil || n != 2 {
		t.Errorf("Backlog = %d, %v; want 2 (the event before the cursor and unwanted ones do not count)", n, err)
	}
	down := errors.New("connection refused")
	d, ok, err := deliverNext(t, st, "hook", f, func(context.Context, resolver.Event) error { return down }, func(int) time.Duration { return time.Hour })
	if err != nil || !ok || d.Err != down || d.Attempts != 1 || d.Event.Channel != "a" {
		t.Fatalf("failed delivery = %+v, %v, %v", d, ok, err)
	}
	if _, ok, _ := st.DeliverNext(ctx, "hook", f, func(context.Context, resolver.Event) error { return nil }, noBackoff); ok {
		t.Fatal("delivered during the backoff")
	}
	// A new store (a restart) finds the cursor where the old one left it.
	query(t, u, `update notify_cursors set next_attempt = now()`)
	st2, _ := newStoreAt(t, u)
	got := drain(t, st2, "hook", f, 2)
	if len(got) != 2 || got[0].Channel != "a" || got[1].Source != "src" {
		t.Errorf("after restart sent %+v, want a's change then src's block", got)
	}
	_, cursors, err := st2.RecentEvents(ctx, 10)
	if err != nil || len(cursors) != 1 || cursors[0].Attempts != 0 || cursors[0].LastError != "" || cursors[0].DeliveredAt.IsZero() {
		t.Errorf("cursor after delivery = %+v, %v", cursors, err)
	}
}

// newStoreAt opens another Store on url, as a restarted process would.
func newStoreAt(t *testing.T, url string) (*store.Store, string) {
	t.Helper()
	st, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st, url
}

func TestLastServedIsEachChannelsNewestAnnouncement(t *testing.T) {
	st, _ := newStore(t, "k3s")
	ctx := context.Background()
	if err := st.AddEvents(ctx, []resolver.Event{
		{Type: resolver.EventChannelChanged, Channel: "a", To: "1.0.0"},
		{Type: resolver.EventChannelChanged, Channel: "b", To: "2.0.0"},
		{Type: resolver.EventVersionBlocked, Source: "k3s", To: "2.0.0"},
		{Type: resolver.EventChannelChanged, Channel: "a", From: "1.0.0", To: "1.1.0"},
		{Type: resolver.EventRolloutChanged, Channel: "b", To: "9.9.9"},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := st.LastServed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1.1.0", "b": "2.0.0"}; !maps.Equal(got, want) {
		t.Errorf("LastServed = %v, want %v", got, want)
	}
}
