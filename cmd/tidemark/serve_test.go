package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestSIGHUPAppliesChannels: a channel removed from the file stops being
// served after SIGHUP, and a broken file changes nothing.
func TestSIGHUPAppliesChannels(t *testing.T) {
	c := startServe(t)
	base := c.env["TIDEMARK_SERVER"]
	status := func(channel string) int {
		t.Helper()
		res, err := http.Get(base + "/api/v1/channels/" + channel)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	waitFor := func(channel string, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for status(channel) != want {
			if time.Now().After(deadline) {
				t.Fatalf("channel %s: status %d, want %d", channel, status(channel), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := status("latest"); got != http.StatusOK {
		t.Fatalf("before SIGHUP: channel latest answers %d, want 200", got)
	}

	path := c.env["TIDEMARK_CONFIG"]
	without := strings.Replace(e2eConfig, "  - name: latest\n    source: k3s\n", "", 1)
	if without == e2eConfig {
		t.Fatal("test config no longer has the latest channel to remove")
	}
	if err := os.WriteFile(path, []byte(without), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor("latest", http.StatusNotFound)
	if got := status("v1.33"); got != http.StatusOK {
		t.Fatalf("after SIGHUP: channel v1.33 answers %d, want 200", got)
	}

	if err := os.WriteFile(path, []byte("channels: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// A broken file must not empty the service: give the handler time to
	// run, then check the running channels are still served.
	time.Sleep(300 * time.Millisecond)
	if got := status("v1.33"); got != http.StatusOK {
		t.Fatalf("after SIGHUP with a broken file: channel v1.33 answers %d, want 200", got)
	}
}

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
	srv, err := server.New(server.Options{Log: log, Load: func(context.Context) (*resolver.Snapshot, error) {
		return resolver.NewSnapshot(nil, nil, nil, time.Now()), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	recovered := make(chan struct{}, 1)
	go watchDatabase(ctx, st, srv, log, 20*time.Millisecond, func() {
		_ = srv.Reload(ctx)
		recovered <- struct{}{}
	})

	admin, err := pgx.Connect(ctx, storetest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := strings.TrimPrefix(mustParseURL(t, dbURL).Path, "/")
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
	select {
	case <-recovered:
	case <-time.After(10 * time.Second):
		t.Fatal("database came back but no recovery was seen within 10s")
	}
	if got := ready(); got != "ok\n" {
		t.Fatalf("/readyz after recovery: %q, want ok", got)
	}
}

func mustParseURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
