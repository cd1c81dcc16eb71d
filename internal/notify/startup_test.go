package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/resolvertest"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestStartUpMovesReachANewEndpoint: a replica that starts leading records
// the moves of its first snapshot (here "" -> v1.0.0) as Run starts, and an
// endpoint configured for the first time is sent them. Its cursor starts at
// the newest event, so the cursor must exist before they are written; when
// both ran at once, the move was written first in some runs and never sent
// (TestPushIsServedWithoutAScan caught it once). Eight fresh databases, so
// a race lost in any one fails the test.
func TestStartUpMovesReachANewEndpoint(t *testing.T) {
	now := time.Now()
	src := resolvertest.SemverSource(t, "k3s", "registry.example/k3s")
	snap := snapshot.New([]catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}},
		[]catalog.SourceData{resolvertest.SourceData(src, []string{"v1.0.0"}, nil, now)}, nil, now)
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			rcv, d, _ := newEndpointDeliverer(t)
			d.SnapshotChanged(nil, snap) // the first snapshot as leader
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { d.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			if ce := firstEvent(t, rcv); ce.Data.Channel != "stable" || ce.Data.From != "" || ce.Data.To != "v1.0.0" {
				t.Errorf("first event %+v, want stable moved from nothing to v1.0.0", ce.Data)
			}
		})
	}
}

// TestTheFirstSnapshotIsComparedBeforeLaterSwaps: a replica starts
// leading on a snapshot that serves nothing (S0); the start-up scan then
// serves v1.0.0 (S1) and a push v1.0.1 (S2), all before the writer runs.
// The endpoint must get "" -> v1.0.0, v1.0.0 -> v1.0.1 and nothing else.
// With the first snapshot on a queue of its own, the writer could take
// the later swaps' events first and then compare S0 with them: a false
// "v1.0.1 is gone from the registry" (TestPushIsServedWithoutAScan caught
// it in CI). Eight fresh databases: the writer picked between the two
// queues at random.
func TestTheFirstSnapshotIsComparedBeforeLaterSwaps(t *testing.T) {
	now := time.Now()
	src := resolvertest.SemverSource(t, "k3s", "registry.example/k3s")
	chs := []catalog.Channel{{Name: "stable", Source: "k3s", Stream: resolver.Released}}
	serving := func(tags ...string) *snapshot.Snapshot {
		return snapshot.New(chs, []catalog.SourceData{resolvertest.SourceData(src, tags, nil, now)}, nil, now)
	}
	s0, s1, s2 := serving(), serving("v1.0.0"), serving("v1.0.0", "v1.0.1")
	for i := range 8 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			rcv, d, st := newEndpointDeliverer(t)
			ctx, cancel := context.WithCancel(context.Background())
			if err := d.StartCursors(ctx); err != nil {
				t.Fatal(err)
			}
			d.SnapshotChanged(nil, s0) // the first snapshot as leader
			d.SnapshotChanged(s0, s1)
			d.SnapshotChanged(s1, s2)
			done := make(chan struct{})
			go func() { d.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			waitFor(t, "two notifications", func() bool {
				bodies, _ := rcv.received()
				return len(bodies) >= 2
			})
			// A last event after them: once it is sent, everything
			// recorded before it was sent too.
			if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s",
				From: "v1.0.1", To: "v1.0.0", Actor: "alice", Reason: "pinned"}}); err != nil {
				t.Fatal(err)
			}
			d.Kick()
			var got []string
			waitFor(t, "alice's pin, sent", func() bool {
				bodies, _ := rcv.received()
				got = got[:0]
				for _, b := range bodies {
					var ce notify.CloudEvent
					if err := json.Unmarshal(b, &ce); err != nil {
						t.Fatal(err)
					}
					got = append(got, ce.Data.From+" -> "+ce.Data.To)
				}
				return len(got) > 0 && got[len(got)-1] == "v1.0.1 -> v1.0.0"
			})
			want := []string{" -> v1.0.0", "v1.0.0 -> v1.0.1", "v1.0.1 -> v1.0.0"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("sent %q, want %q", got, want)
			}
		})
	}
}

// TestAnEventBeforeRunReachesANewEndpoint: serve makes the cursors
// (StartCursors) before it serves, so a pin made through the API before
// the deliverer's Run starts is still sent to an endpoint configured for
// the first time. Without StartCursors, Run would make the cursor after
// the event and skip it.
func TestAnEventBeforeRunReachesANewEndpoint(t *testing.T) {
	rcv, d, st := newEndpointDeliverer(t)
	ctx, cancel := context.WithCancel(context.Background())
	if err := d.StartCursors(ctx); err != nil {
		t.Fatal(err)
	}
	pin := resolver.Event{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", From: "", To: "v1.0.0", Actor: "alice", Reason: "pinned"}
	if err := st.AddEvents(ctx, []resolver.Event{pin}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if ce := firstEvent(t, rcv); ce.Data.To != "v1.0.0" || ce.Data.Actor != "alice" {
		t.Errorf("first event %+v, want alice's pin to v1.0.0", ce.Data)
	}

	// A cursor that exists is left alone: StartCursors again does not skip
	// what is pending.
	if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", From: "v1.0.0", To: "v1.0.1", Actor: "bob"}}); err != nil {
		t.Fatal(err)
	}
	if err := d.StartCursors(ctx); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	waitFor(t, "the second event, sent", func() bool {
		bodies, _ := rcv.received()
		return len(bodies) > 1
	})
}

// newEndpointDeliverer is a leading deliverer on a fresh database with one
// endpoint it has never seen, a receiver that is up.
func newEndpointDeliverer(t *testing.T) (*receiver, *notify.Deliverer, *store.Store) {
	t.Helper()
	rcv := newReceiver(t)
	rcv.up.Store(true)
	st, err := store.Open(context.Background(), storetest.URL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	d, err := notify.New(notify.Options{
		Endpoints: []notify.Endpoint{{Name: "new-endpoint", URL: rcv.srv.URL, Kind: "webhook"}},
		Store:     st, Leading: func() bool { return true }, Metrics: prometheus.NewRegistry(),
		Poll: 20 * time.Millisecond, BackoffMin: 10 * time.Millisecond, BackoffMax: 40 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rcv, d, st
}

// firstEvent waits for rcv's first notification and decodes it.
func firstEvent(t *testing.T, rcv *receiver) notify.CloudEvent {
	t.Helper()
	waitFor(t, "a notification sent to the new endpoint", func() bool {
		bodies, _ := rcv.received()
		return len(bodies) > 0
	})
	bodies, _ := rcv.received()
	var ce notify.CloudEvent
	if err := json.Unmarshal(bodies[0], &ce); err != nil {
		t.Fatal(err)
	}
	return ce
}
