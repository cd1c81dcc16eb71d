package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// listen starts st.Listen and returns the channel of payloads it delivers,
// once the listener listens (its first payload, ReconnectedPayload, says
// so): a notification sent earlier would be lost and the test would wait
// for nothing.
func listen(t *testing.T, st *store.Store) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 100)
	done := make(chan error)
	go func() { done <- st.Listen(ctx, func(p string) { got <- p }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen returned %v after ctx ended, want nil", err)
		}
	})
	if m := next(t, got); m["kind"] != "reconnected" {
		t.Fatalf("first payload %v, want reconnected (the listener listens)", m)
	}
	return got
}

func next(t *testing.T, ch <-chan string) map[string]string {
	t.Helper()
	select {
	case p := <-ch:
		var m map[string]string
		if err := json.Unmarshal([]byte(p), &m); err != nil {
			t.Fatalf("payload %q: %v", p, err)
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no notification within 10s")
		return nil
	}
}

func TestListenHearsChangesAndSurvivesLostConnection(t *testing.T) {
	st, u := newStore(t, "src")
	ctx := context.Background()
	got := listen(t, st)

	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("1.0.0")}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, got); m["kind"] != "scan" || m["source"] != "src" {
		t.Errorf("after scan: %v", m)
	}
	if err := st.SetDigests(ctx, "src", map[string]string{"1.0.0": "sha256:a"}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, got); m["kind"] != "digests" {
		t.Errorf("after digests: %v", m)
	}

	// Kill the listening session; Listen must come back by itself and say so.
	query(t, u, `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen%'`)
	if m := next(t, got); m["kind"] != "reconnected" {
		t.Errorf("after terminate: %v, want reconnected", m)
	}
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Tags: tags("1.0.1")}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, got); m["kind"] != "scan" {
		t.Errorf("after reconnect: %v", m)
	}
}

// Each outage starts the reconnect backoff afresh: after several outages in
// a row the listener still comes back within a fraction of a second (with
// the backoff kept doubling, the 6th waited 3.2s).
func TestListenReconnectsQuicklyAfterEveryOutage(t *testing.T) {
	st, u := newStore(t, "src")
	got := listen(t, st)
	for i := 1; i <= 7; i++ {
		start := time.Now()
		query(t, u, `select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen%'`)
		if m := next(t, got); m["kind"] != "reconnected" {
			t.Fatalf("outage %d: %v, want reconnected", i, m)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("outage %d: back after %v, want well under 3s", i, d)
		}
	}
}

// A write that loses its connection half-way returns ErrUnavailable and
// leaves nothing behind; the next write reconnects by itself.
func TestLostConnectionMidScanWritesNothing(t *testing.T) {
	st, u := newStore(t, "src")
	ctx := context.Background()
	// Hold a lock that makes ApplyScan wait at its last insert, after its
	// tags are merged; then kill its session.
	lockDone := storetest.HoldLock(t, u, `lock table scans in exclusive mode`)
	defer lockDone() // also on Fatal: a waiting ApplyScan would hang Close
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("1.0.0", "1.1.0")})
		errc <- err
	}()
	for i := 0; ; i++ {
		n := query(t, u, `select pg_terminate_backend(pid) from pg_stat_activity
			where datname = current_database() and wait_event_type = 'Lock' and query like '%insert into scans%' and pid <> pg_backend_pid()`)
		if len(n) > 0 {
			break
		}
		if i > 400 {
			t.Fatal("ApplyScan never reached the scans insert")
		}
		time.Sleep(10 * time.Millisecond)
	}
	lockDone()
	err := <-errc
	if !errors.Is(err, resolver.ErrUnavailable) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("ApplyScan err = %v, want one-line ErrUnavailable", err)
	}
	t.Log(err)
	if n := query(t, u, `select (select count(*) from tags) + (select count(*) from scans)`)[0][0].(int64); n != 0 {
		t.Fatalf("%d rows left behind by the failed transaction", n)
	}
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: tags("1.0.0")}); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
}
