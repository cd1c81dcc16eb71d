package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/notify"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func waitCursors(t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	waitFor(t, "cursors", func() bool {
		var got int
		return conn.QueryRow(context.Background(), `select count(*) from notify_cursors`).Scan(&got) == nil && got == n
	})
}

// TestAnEventCommittedLateIsStillDelivered: an event whose transaction took
// its id first but commits after a later event was delivered arrives all
// the same (issue 24 item 1: "id > last_id" skipped it for ever).
func TestAnEventCommittedLateIsStillDelivered(t *testing.T) {
	url := storetest.URL(t)
	hook := newReceiver(t)
	hook.up.Store(true)
	d, st, _ := start(t, url, []notify.Endpoint{{Name: "hook", URL: hook.srv.URL, Kind: "webhook"}})
	ctx := context.Background()
	waitCursors(t, connect(t, url), 1)

	slow := connect(t, url)
	tx, err := slow.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `insert into outbox (type, channel, source, to_version, actor)
		values ('dev.tidemark.channel.changed', 'stable', 'k3s', 'late', 'psql')`); err != nil {
		t.Fatal(err)
	}
	if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", To: "early", Actor: "pin"}}); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	// The early event waits behind the open transaction: delivering it now
	// would put the cursor past the late one's id.
	time.Sleep(300 * time.Millisecond)
	if b, _ := hook.received(); len(b) != 0 {
		t.Fatalf("%d events delivered while an older transaction was open; want them held", len(b))
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	waitFor(t, "both events", func() bool { b, _ := hook.received(); return len(b) == 2 })
	bodies, _ := hook.received()
	var tos []string
	for _, b := range bodies {
		var ce notify.CloudEvent
		if err := json.Unmarshal(b, &ce); err != nil {
			t.Fatal(err)
		}
		tos = append(tos, ce.Data.To)
	}
	if strings.Join(tos, ",") != "late,early" {
		t.Errorf("delivered %v, want late then early (transaction order)", tos)
	}
	// The receiver has the second event before the deliverer records it:
	// wait for the record, then check it.
	var s openapi.Notifications
	waitFor(t, "both deliveries recorded", func() bool {
		s, err = d.Status(ctx, 10)
		if err != nil || s.Endpoints[0].Backlog != 0 {
			return false
		}
		for _, e := range s.Events {
			if e.Deliveries["hook"] != "delivered" {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Endpoints[0].Backlog != 0 {
		t.Errorf("backlog %d after both were delivered", s.Endpoints[0].Backlog)
	}
	for _, e := range s.Events {
		if e.Deliveries["hook"] != "delivered" {
			t.Errorf("event %s to %s: %q, want delivered", e.ID, e.To, e.Deliveries["hook"])
		}
	}
}

// TestConcurrentWritersLoseNoEvent: many writers committing in any order;
// every event arrives exactly once.
func TestConcurrentWritersLoseNoEvent(t *testing.T) {
	url := storetest.URL(t)
	var got atomic.Int64
	seen := make(chan string, 1000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ce notify.CloudEvent
		if err := json.NewDecoder(r.Body).Decode(&ce); err == nil {
			seen <- ce.ID
			got.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	d, st, _ := start(t, url, []notify.Endpoint{{Name: "hook", URL: srv.URL, Kind: "webhook"}})
	waitCursors(t, connect(t, url), 1)
	const writers, each = 8, 40
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			conn, err := pgx.Connect(context.Background(), url)
			if err != nil {
				done <- err
				return
			}
			defer conn.Close(context.Background())
			for i := range each {
				// Each writer sleeps a little inside its transaction, so that
				// commits interleave out of id order.
				_, err := conn.Exec(context.Background(), `begin;
					insert into outbox (type, channel, source, to_version) values ('dev.tidemark.channel.changed', 'stable', 'k3s', 'v');
					select pg_sleep(random() * 0.01);
					commit`)
				if err != nil {
					done <- err
					return
				}
				if i%10 == 0 {
					d.Kick()
				}
			}
			done <- nil
			_ = w
		}()
	}
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	_ = st
	d.Kick()
	waitFor(t, "every event", func() bool { return got.Load() >= writers*each })
	time.Sleep(100 * time.Millisecond)
	ids := map[string]bool{}
	for len(seen) > 0 {
		id := <-seen
		if ids[id] {
			t.Errorf("event %s delivered twice", id)
		}
		ids[id] = true
	}
	if len(ids) != writers*each {
		t.Errorf("%d distinct events delivered, want %d", len(ids), writers*each)
	}
}

// TestAStalledReceiverHoldsNoTransaction: while a receiver keeps a delivery
// waiting, no connection of Tidemark's sits in a transaction (issue 24 item
// 6: six stalled receivers starved the pool).
func TestAStalledReceiverHoldsNoTransaction(t *testing.T) {
	url := storetest.URL(t)
	release := make(chan struct{})
	var arrived atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	var eps []notify.Endpoint
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		eps = append(eps, notify.Endpoint{Name: n, URL: srv.URL, Kind: "webhook"})
	}
	d, st, _ := start(t, url, eps)
	conn := connect(t, url)
	waitCursors(t, conn, len(eps))
	ctx := context.Background()
	if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", To: "v"}}); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	waitFor(t, "six stalled deliveries", func() bool { return arrived.Load() == int64(len(eps)) })
	var inTx int
	if err := conn.QueryRow(ctx, `select count(*) from pg_stat_activity
		where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%'`).Scan(&inTx); err != nil {
		t.Fatal(err)
	}
	if inTx != 0 {
		t.Errorf("%d connections idle in a transaction while receivers stall, want 0", inTx)
	}
	// Writers are not held up either.
	start := time.Now()
	if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", To: "w"}}); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a write took %v while receivers stall", took)
	}
}

// TestARedirectIsAFailureAndIsNotFollowed: a receiver answering 307 or 302
// gets no delivery marked, and the address it names is never contacted
// (issue 24 item 7: SSRF and false "delivered").
func TestARedirectIsAFailureAndIsNotFollowed(t *testing.T) {
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var elsewhere atomic.Int64
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
			}))
			t.Cleanup(target.Close)
			var tries atomic.Int64
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tries.Add(1)
				http.Redirect(w, r, target.URL+"/internal", code)
			}))
			t.Cleanup(redirector.Close)
			url := storetest.URL(t)
			d, st, _ := start(t, url, []notify.Endpoint{{Name: "hook", URL: redirector.URL + "/hook?token=s3cret", Kind: "webhook"}})
			waitCursors(t, connect(t, url), 1)
			ctx := context.Background()
			if err := st.AddEvents(ctx, []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", To: "v"}}); err != nil {
				t.Fatal(err)
			}
			d.Kick()
			waitFor(t, "two attempts", func() bool { return tries.Load() >= 2 })
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("the redirect's target got %d requests", n)
			}
			s, err := d.Status(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			ep := s.Endpoints[0]
			if ep.Backlog != 1 || ep.DeliveredAt != nil {
				t.Errorf("endpoint %+v, want the event still due", ep)
			}
			if !strings.Contains(ep.LastError, "redirect") || strings.Contains(ep.LastError, "s3cret") || strings.Contains(ep.LastError, "/hook") {
				t.Errorf("last_error %q, want a redirect failure naming only scheme://host/…", ep.LastError)
			}
		})
	}
}

// TestSlackTextIsEscaped: a reason of "<!channel>" pings nobody and a
// "<url|label>" shows as text (issue 24 item 12).
func TestSlackTextIsEscaped(t *testing.T) {
	b, _, err := notify.Body("slack", "tidemark", resolver.Event{Type: resolver.EventChannelChanged, Channel: "stable",
		To: "v2", Actor: "a&b", Reason: "<!channel> see <http://evil.example|the notes>"})
	if err != nil {
		t.Fatal(err)
	}
	var msg map[string]string
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	want := "Channel stable now serves v2 (was nothing), by a&amp;b: &lt;!channel&gt; see &lt;http://evil.example|the notes&gt;"
	if msg["text"] != want {
		t.Errorf("text %q\nwant %q", msg["text"], want)
	}
}

func TestRedactURLKeepsOnlySchemeAndHost(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXX": "https://hooks.slack.com/…",
		"http://127.0.0.1:9/hook?token=abc":           "http://127.0.0.1:9/…",
		"::not a url":                                 "(not a URL)",
	} {
		if got := notify.RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestBodiesMatchTheSpecsWebhooks: what a receiver gets is what
// openapi.yaml's webhooks section says (issue 25 item 15).
func TestBodiesMatchTheSpecsWebhooks(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	e := resolver.Event{ID: 7, At: time.Now(), Type: resolver.EventVersionBlocked, Source: "k3s", To: "v1.33.6+k3s1", Actor: "alice", Reason: "CVE"}
	for kind, schema := range map[string]string{"webhook": "CloudEvent", "slack": "SlackMessage"} {
		b, _, err := notify.Body(kind, "https://tidemark.example.com", e)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if err := doc.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
			t.Errorf("%s body %s does not match schema %s: %v", kind, b, schema, err)
		}
	}
	if doc.Webhooks["notification"] == nil || doc.Webhooks["slackNotification"] == nil {
		t.Error("openapi.yaml's webhooks section lacks notification or slackNotification")
	}
}

// TestAShutdownMidSendReleasesTheClaim: a replica stopped while a receiver
// holds its delivery records the attempt on the way out, so a restart
// delivers at once rather than after the claim's one-minute lease.
func TestAShutdownMidSendReleasesTheClaim(t *testing.T) {
	url := storetest.URL(t)
	var stall atomic.Bool
	stall.Store(true)
	arrived := make(chan struct{}, 10)
	var delivered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leave
		if stall.Load() {
			arrived <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
			return
		}
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	eps := []notify.Endpoint{{Name: "hook", URL: srv.URL, Kind: "webhook"}}
	d, st, stop := start(t, url, eps)
	waitCursors(t, connect(t, url), 1)
	if err := st.AddEvents(context.Background(), []resolver.Event{{Type: resolver.EventChannelChanged, Channel: "stable", Source: "k3s", To: "v"}}); err != nil {
		t.Fatal(err)
	}
	d.Kick()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery never reached the receiver")
	}
	stop() // mid-send
	stall.Store(false)
	start(t, url, eps)
	deadline := time.Now().Add(5 * time.Second)
	for delivered.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("after a restart the event was not delivered within 5 s: the stopped replica's claim still holds it")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
