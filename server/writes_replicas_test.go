package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
)

// listen wires st's changes to srv the way Run does, and returns once the
// listener provably hears notifications (a
// notification sent before LISTEN took effect would be lost, and the test
// would wait for nothing).
func listen(t *testing.T, env *pgEnv, st *store.Store, srv *Server) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var heard atomic.Int64
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		_ = st.ListenChanges(ctx, func(c snapshot.Change) {
			heard.Add(1)
			srv.Notify(c)
		})
	}()
	go func() { defer func() { done <- struct{}{} }(); srv.Snapshots().Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	conn, err := pgx.Connect(ctx, env.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for heard.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener heard no notification within 10s")
		}
		if _, err := conn.Exec(ctx, "select pg_notify($1, '{\"kind\":\"test\"}')", store.NotifyChannel); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTwoReplicasOneDatabase: a pin through one replica is served by the
// other within a second, and a block through the second by the first.
func TestTwoReplicasOneDatabase(t *testing.T) {
	env := newPGEnv(t, Options{})
	stB := openStore(t, env.url)
	srvB, tsB, _ := env.serve(stB, Options{})
	listen(t, env, env.st, env.srv)
	listen(t, env, stB, srvB)

	// waitFor polls ts until channel v1.33 serves want; it returns how long that took.
	waitFor := func(ts *httptest.Server, want string, from time.Time) time.Duration {
		t.Helper()
		for {
			got, _ := channel(t, ts, "v1.33")
			if str(got.Version) == want {
				return time.Since(from)
			}
			if time.Since(from) > time.Second {
				t.Fatalf("after 1s the other replica still serves %s, want %s", str(got.Version), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	_, etag := channel(t, tsB, "v1.33")
	start := time.Now()
	res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.4+k3s1"}`, "If-Match", etag)
	if res.StatusCode != 200 {
		t.Fatalf("pin through A: %d %s", res.StatusCode, body)
	}
	t.Logf("pin through A served by B after %v", waitFor(tsB, "v1.33.4+k3s1", start))
	// B's ETag now matches A's: either replica accepts the other's.
	if _, tagB := channel(t, tsB, "v1.33"); tagB != res.Header.Get("ETag") {
		t.Errorf("ETag on B %s, on A %s: replicas disagree", tagB, res.Header.Get("ETag"))
	}

	start = time.Now()
	res, body = do(t, env, tsB, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.4+k3s1/block", "root", `{"reason":"bad"}`)
	if res.StatusCode != 200 {
		t.Fatalf("block through B: %d %s", res.StatusCode, body)
	}
	for {
		if _, ok := sucResolve(t, env.ts.URL+"/v1-release/channels/v1.33"); !ok {
			t.Logf("block through B seen by A after %v", time.Since(start))
			break
		}
		if time.Since(start) > time.Second {
			t.Fatal("after 1s replica A still serves a version blocked through B")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWritesRateLimitedPerToken: a token past its burst gets 429 with
// Retry-After; another token and reads are not affected.
func TestWritesRateLimitedPerToken(t *testing.T) {
	env := newPGEnv(t, Options{WriteRate: 5, WriteBurst: 10})
	limited := 0
	for i := range 20 {
		res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v9.9.9"}`)
		if res.StatusCode == http.StatusTooManyRequests {
			if i < 10 {
				t.Fatalf("request %d limited inside the burst of 10", i)
			}
			if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || n < 1 {
				t.Errorf("429 with Retry-After %q, want whole seconds >= 1", res.Header.Get("Retry-After"))
			}
			if !strings.Contains(string(body), "rate-limited") {
				t.Errorf("429 body %s", body)
			}
			limited++
			break
		}
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Fatalf("request %d: %d %s", i, res.StatusCode, body)
		}
	}
	if limited == 0 {
		t.Fatal("20 writes in a burst of 10 at 5/s: none was limited")
	}
	if res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "root", `{"version":"v9.9.9"}`); res.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("another token: %d %s, want its own budget", res.StatusCode, body)
	}
	if res, _ := get(t, env.ts, "/api/v1/channels/v1.33"); res.StatusCode != 200 {
		t.Errorf("a read: %d", res.StatusCode)
	}
}

// TestScanTriggersRealIndexer: POST .../scan through a real indexer reading
// an in-process registry; the new tag is served once the scan lands.
func TestScanTriggersRealIndexer(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(reg.URL, "http://")+"/rancher/k3s-upgrade", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range []string{"v1.33.6-k3s2", "v1.33.7-k3s1"} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(repo.Tag(tag), img); err != nil {
			t.Fatalf("push %s: %v", tag, err)
		}
	}

	var ix *indexer.Indexer
	env := newPGEnv(t, Options{Scan: func(ctx context.Context, source string) (bool, error) {
		return ix.Status(source).Running, ix.Trigger(ctx, source)
	}})
	src := env.src
	src.Image = repo.String()
	ix, err = indexer.New(indexer.Options{
		Sources:  []indexer.Source{{Source: src, Insecure: true}},
		Store:    env.st,
		OnChange: func(string) { _ = env.srv.Reload(context.Background()) },
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, tok := range []string{"", "scanner"} {
		if res, _ := do(t, env, env.ts, http.MethodPost, "/api/v1/sources/nope/scan", tok, ""); tok != "" && res.StatusCode != http.StatusNotFound {
			t.Errorf("scan of an unknown source: %d, want 404", res.StatusCode)
		} else if tok == "" && res.StatusCode != http.StatusUnauthorized {
			t.Errorf("scan without a token: %d, want 401", res.StatusCode)
		}
	}
	res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/sources/k3s/scan", "scanner", "")
	var ans openapi.ScanStarted
	if res.StatusCode != http.StatusAccepted || json.Unmarshal(body, &ans) != nil || ans.Source != "k3s" || (ans.Status != "started" && ans.Status != "running") {
		t.Fatalf("scan: %d %s, want 202 started", res.StatusCode, body)
	}
	// A promote token may scan too.
	if res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/sources/k3s/scan", "ci-promote", ""); res.StatusCode != http.StatusAccepted {
		t.Errorf("scan with scope promote: %d %s", res.StatusCode, body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := channel(t, env.ts, "v1.33")
		if str(got.Version) == "v1.33.7+k3s1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10s after POST scan, v1.33 serves %s, want the newly pushed v1.33.7+k3s1", str(got.Version))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestScanOnReplicaThatDoesNotIndex: no scanner, 503 saying so.
func TestScanOnReplicaThatDoesNotIndex(t *testing.T) {
	env := newPGEnv(t, Options{})
	res, body := do(t, env, env.ts, http.MethodPost, "/api/v1/sources/k3s/scan", "scanner", "")
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "does not index") {
		t.Errorf("scan without an indexer: %d %s, want 503 that says this replica does not index", res.StatusCode, body)
	}
}

// TestWritesWithDatabaseGone: with the store's connections gone, writes and
// the history answer 503 problem+json and reads keep answering; a write
// whose commit landed but whose reload failed says so instead of inviting a
// blind retry, and nothing is half-written.
func TestWritesWithDatabaseGone(t *testing.T) {
	env := newPGEnv(t, Options{})
	gone := openStore(t, env.url)
	gone.Close()
	_, tsGone, _ := env.serve(gone, Options{Load: loadFrom(env.st, env.src)})
	for _, w := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/channels/v1.33/pin", `{"version":"v1.33.5+k3s1"}`},
		{"DELETE", "/api/v1/channels/v1.33/pin", ""},
		{"PUT", "/api/v1/sources/k3s/versions/v1.33.5+k3s1/block", `{"reason":"x"}`},
		{"GET", "/api/v1/channels/v1.33/history", ""},
	} {
		res, body := do(t, env, tsGone, w.method, w.path, "root", w.body)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s with the database gone: %d %s, want 503 problem+json", w.method, w.path, res.StatusCode, body)
		}
	}
	if res, _ := get(t, tsGone, "/v1-release/channels/v1.33"); res.StatusCode != http.StatusFound {
		t.Errorf("channel URL with the database gone: %d, want 302 from the snapshot", res.StatusCode)
	}

	// The write commits, then the reload fails: 503 that says it committed.
	var failLoad atomic.Bool
	load := loadFrom(env.st, env.src)
	srv, ts, _ := env.serve(env.st, Options{Load: func(ctx context.Context) (*snapshot.Snapshot, error) {
		if failLoad.Load() {
			return nil, errors.New("unavailable: database connection lost")
		}
		return load(ctx)
	}})
	failLoad.Store(true)
	res, body := do(t, env, ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "root", `{"version":"v1.33.5+k3s1"}`)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "pinned, but this replica could not reload") {
		t.Errorf("pin with a failing reload: %d %s", res.StatusCode, body)
	}
	if ev, err := env.st.History(context.Background(), "v1.33"); err != nil || len(ev) != 1 {
		t.Errorf("history after the committed pin: %v %v, want one event", ev, err)
	}
	failLoad.Store(false)
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := channel(t, ts, "v1.33"); str(got.Version) != "v1.33.5+k3s1" {
		t.Errorf("after the next reload: %s, want the committed pin v1.33.5+k3s1", str(got.Version))
	}
}
