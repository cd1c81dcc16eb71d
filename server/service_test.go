package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/internal/live"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestDatabaseOutageDegradesReadiness: while the database is gone /readyz
// stays 200 but says degraded, and once it is back the snapshot reloads and
// the degraded state clears. The outage is real: the test database is
// dropped (connections terminated) and created again.
func TestDatabaseOutageDegradesReadiness(t *testing.T) {
	dbURL := storetest.URL(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := store.Open(ctx, dbURL, log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := New(Options{Log: log, Load: func(context.Context) (*snapshot.Snapshot, error) {
		return snapshot.New(nil, nil, nil, time.Now()), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- runService(ctx, srv, ln, runOpts{Ping: st.Ping, PingEvery: 20 * time.Millisecond}) }()
	defer func() { cancel(); <-done }()

	admin, err := pgx.Connect(ctx, storetest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := strings.TrimPrefix(mustURLPath(t, dbURL), "/")
	if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	ready := func() string {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/readyz answered %d during the outage; want 200 while a snapshot exists", rec.Code)
		}
		return rec.Body.String()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.HasPrefix(ready(), "degraded:") {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still says %q 10s after the database was dropped", ready())
		}
		time.Sleep(10 * time.Millisecond)
	}

	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for ready() != "ok\n" {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still says %q 10s after the database came back; want ok", ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustURLPath(t *testing.T, s string) string {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// countingData counts each kind of read a server makes of its Data.
type countingData struct {
	live.Data
	mu                  sync.Mutex
	all, sources, state int
}

func (d *countingData) Load(ctx context.Context, s []catalog.Source) ([]catalog.SourceData, map[string]catalog.ChannelState, error) {
	d.mu.Lock()
	d.all++
	d.mu.Unlock()
	return d.Data.Load(ctx, s)
}

func (d *countingData) LoadSources(ctx context.Context, s []catalog.Source) ([]catalog.SourceData, error) {
	d.mu.Lock()
	d.sources++
	d.mu.Unlock()
	return d.Data.LoadSources(ctx, s)
}

func (d *countingData) LoadStates(ctx context.Context) (map[string]catalog.ChannelState, error) {
	d.mu.Lock()
	d.state++
	d.mu.Unlock()
	return d.Data.LoadStates(ctx)
}

func (d *countingData) counts() [3]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return [3]int{d.all, d.sources, d.state}
}

// TestAWriteRebuildsOnceAndOnlyItsPart: the replica that pins reads the
// channel states once (not every tag), ignores its own notification, and
// reads just one source when another replica blocks a version there.
func TestAWriteRebuildsOnceAndOnlyItsPart(t *testing.T) {
	env := newPGEnv(t, Options{})
	data := &countingData{Data: env.st}
	srv, ts, _ := env.serve(env.st, Options{Data: data, Sources: []catalog.Source{env.src}, Channels: k3sChannels()})
	listen(t, env, env.st, srv)
	// listen's probes may still be arriving (each reads everything): take
	// the baseline once the counts have held still for a while.
	base := data.counts()
	for stable := time.Now(); time.Since(stable) < 300*time.Millisecond; time.Sleep(20 * time.Millisecond) {
		if c := data.counts(); c != base {
			base, stable = c, time.Now()
		}
	}

	res, body := do(t, env, ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.4+k3s1"}`)
	if res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	// Another replica blocks a version. Its notification comes after the
	// pin's (Postgres delivers in commit order), so once this replica
	// serves the block, it has heard (and left out) its own pin's.
	other := openStore(t, env.url)
	if _, err := other.Block(context.Background(), "k3s", "v1.33.4+k3s1", "them", "bad"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := sucResolve(t, ts.URL+"/v1-release/channels/v1.33"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other replica's block was not applied within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got := data.counts()
	want := [3]int{base[0], base[1] + 1, base[2] + 1}
	if got != want {
		t.Errorf("reads (whole, sources, states) after a pin here and a block there: %v, want %v", got, want)
	}
}

// TestAReloadOfASourceAndTheStatesIsOneRead: when a reload has both a
// source and the channel states to read (a pin and a block made through
// another replica, heard together), it reads them in one Load, from one
// snapshot of the database, and applies both.
func TestAReloadOfASourceAndTheStatesIsOneRead(t *testing.T) {
	env := newPGEnv(t, Options{})
	data := &countingData{Data: env.st}
	srv, ts, _ := env.serve(env.st, Options{Data: data, Sources: []catalog.Source{env.src}, Channels: k3sChannels()})
	if _, ok := sucResolve(t, ts.URL+"/v1-release/channels/v1.33"); !ok {
		t.Fatal("v1.33 serves nothing before the changes")
	}
	ctx := context.Background()
	other := openStore(t, env.url)
	if _, err := other.Pin(ctx, resolver.ChannelChange{Channel: "v1.33", Version: "v1.33.4+k3s1", Actor: "them", IfRevision: resolver.AnyRevision}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Block(ctx, "k3s", "v1.33.4+k3s1", "them", "bad"); err != nil {
		t.Fatal(err)
	}
	base := data.counts()
	err := srv.Snapshots().Update(ctx, snapshot.Changes{Sources: map[string]bool{"k3s": true}, Channels: true})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := data.counts(), [3]int{base[0] + 1, base[1], base[2]}; got != want {
		t.Errorf("reads (whole, sources, states) of a source and the states: %v, want %v", got, want)
	}
	// Pinned to a version now blocked: no answer. The pin alone would
	// answer it, the block alone the channel's latest.
	if v, ok := sucResolve(t, ts.URL+"/v1-release/channels/v1.33"); ok {
		t.Errorf("v1.33 after a pin and a block of its version: %q, want 404", v)
	}
}
