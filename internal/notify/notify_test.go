package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// receiver is a real HTTP endpoint that can be down (503) or up.
type receiver struct {
	up       atomic.Bool
	attempts atomic.Int64
	mu       sync.Mutex
	bodies   [][]byte
	sigs     []string
	srv      *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.attempts.Add(1)
		if !r.up.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.sigs = append(r.sigs, req.Header.Get(notify.SignatureHeader))
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() ([][]byte, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte{}, r.bodies...), append([]string{}, r.sigs...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start runs a deliverer on a fresh Store of url until the returned stop.
func start(t *testing.T, url string, eps []notify.Endpoint) (*notify.Deliverer, *store.Store, func()) {
	t.Helper()
	st, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := notify.New(notify.Options{Endpoints: eps, Store: st, Source: "https://tidemark.test",
		ChannelSources: map[string]string{"stable": "k3s", "edge": "k3s"},
		Metrics:        prometheus.NewRegistry(), Poll: 20 * time.Millisecond,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			st.Close()
		}
	}
	t.Cleanup(stop)
	return d, st, stop
}

func TestDeliveryOutlastsADownReceiverAndARestart(t *testing.T) {
	url := storetest.URL(t)
	hook, slack := newReceiver(t), newReceiver(t)
	slack.up.Store(true)
	eps := []notify.Endpoint{
		{Name: "hook", URL: hook.srv.URL, Kind: "webhook", Secret: func() ([]byte, error) { return []byte("s3cret"), nil }},
		{Name: "chat", URL: slack.srv.URL, Kind: "slack", Channels: []string{"stable"}},
	}
	d, st, stop := start(t, url, eps)
	ctx := context.Background()
	waitFor(t, "cursors", func() bool {
		var n int
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		return conn.QueryRow(ctx, `select count(*) from notify_cursors`).Scan(&n) == nil && n == 2
	})
	events := []resolver.Event{
		{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", From: "v1.33.5+k3s1", To: "v1.33.6+k3s1", Actor: "alice", Reason: "go"},
		{Type: resolver.EventChannelChanged, Channel: "other", Source: "rke2", From: "1", To: "2", Actor: "bob"},
		{Type: resolver.EventVersionBlocked, Source: "k3s", To: "v1.33.6+k3s1", Actor: "carol", Reason: "CVE"},
	}
	if err := st.AddEvents(ctx, events); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	waitFor(t, "slack deliveries", func() bool { b, _ := slack.received(); return len(b) == 2 })
	waitFor(t, "several failed attempts", func() bool { return hook.attempts.Load() >= 3 })
	s, err := d.Status(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if ep := s.Endpoints[0]; ep.Name != "hook" || ep.Attempts == 0 || ep.LastError == "" || ep.Backlog != 3 || ep.NextAttempt == nil {
		t.Errorf("hook state %+v, want failing with 3 events waiting", ep)
	}
	var hookState string
	for _, e := range s.Events {
		if e.Channel == "stable" {
			hookState = e.Deliveries["hook"]
			if e.Deliveries["chat"] != "delivered" {
				t.Errorf("stable event to chat: %q, want delivered", e.Deliveries["chat"])
			}
		}
		if e.Channel == "other" {
			if _, ok := e.Deliveries["chat"]; ok {
				t.Error("chat is limited to stable but lists the event of channel other")
			}
		}
	}
	if hookState != "failing" {
		t.Errorf("stable event to hook: %q, want failing", hookState)
	}

	// A restart (new store, new deliverer) while the receiver is down loses
	// nothing: once it is up, every event arrives once, in order, signed.
	stop()
	hook.up.Store(true)
	start(t, url, eps)
	waitFor(t, "hook deliveries", func() bool { b, _ := hook.received(); return len(b) == 3 })
	bodies, sigs := hook.received()
	var ids []string
	for i, b := range bodies {
		if want := notify.Sign([]byte("s3cret"), b); sigs[i] != want {
			t.Errorf("event %d signature %q, want %q", i, sigs[i], want)
		}
		var ce notify.CloudEvent
		if err := json.Unmarshal(b, &ce); err != nil {
			t.Fatal(err)
		}
		if ce.SpecVersion != "1.0" || ce.Source != "https://tidemark.test" || ce.DataContentType != "application/json" || ce.Time.IsZero() {
			t.Errorf("event %d envelope %+v", i, ce)
		}
		ids = append(ids, ce.ID)
		if ce.Type != events[i].Type || ce.Data.Channel != events[i].Channel || ce.Data.To != events[i].To || ce.Data.Actor != events[i].Actor {
			t.Errorf("event %d = %+v, want %+v", i, ce, events[i])
		}
	}
	if ids[0] == ids[1] || ids[1] == ids[2] {
		t.Errorf("ids %v are not distinct", ids)
	}
	slackBodies, _ := slack.received()
	var msg map[string]string
	if err := json.Unmarshal(slackBodies[0], &msg); err != nil || msg["text"] == "" {
		t.Errorf("slack body %s: want {\"text\": ...}", slackBodies[0])
	}
}

// TestRolloutEventNamesItsChannelsSource: a rollout's event is written with
// its channel only; its CloudEvent's data and the status name the
// channel's source from the configuration.
func TestRolloutEventNamesItsChannelsSource(t *testing.T) {
	hook := newReceiver(t)
	hook.up.Store(true)
	url := storetest.URL(t)
	d, st, _ := start(t, url, []notify.Endpoint{{Name: "hook", URL: hook.srv.URL, Kind: "webhook"}})
	ctx := context.Background()
	waitFor(t, "the cursor", func() bool { // a new endpoint's cursor starts at the outbox's end
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		return conn.QueryRow(ctx, `select count(*) from notify_cursors`).Scan(&n) == nil && n == 1
	})
	ev := resolver.Event{Type: resolver.EventRolloutChanged, Channel: "stable", From: "v1.33.5+k3s1", To: "v1.33.6+k3s1", Actor: "alice", Reason: "rollout-pause"}
	if err := st.AddEvents(ctx, []resolver.Event{ev}); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	waitFor(t, "the delivery", func() bool { b, _ := hook.received(); return len(b) == 1 })
	bodies, _ := hook.received()
	var ce notify.CloudEvent
	if err := json.Unmarshal(bodies[0], &ce); err != nil {
		t.Fatal(err)
	}
	if ce.Type != resolver.EventRolloutChanged || ce.Data.Source != "k3s" {
		t.Errorf("delivered %s with data.source %q, want %s with k3s", ce.Type, ce.Data.Source, resolver.EventRolloutChanged)
	}
	s, err := d.Status(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Events) != 1 || s.Events[0].Source != "k3s" {
		t.Errorf("status events %+v, want the rollout event with source k3s", s.Events)
	}
}
