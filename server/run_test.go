package server

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/internal/service"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// runOpts are what a test's replica runs besides HTTP, as cmd/tidemark
// wires it: all optional.
type runOpts struct {
	Changes   func(ctx context.Context, fn func(snapshot.Change)) error
	Ping      func(ctx context.Context) error
	PingEvery time.Duration
	// Leading, Every and CountEvery are the rollout loops' (internal/rollouts).
	Leading           func() bool
	Every, CountEvery time.Duration
}

// runService runs srv as a replica (service.Run: the HTTP server and every
// loop beside it) on ln until ctx ends.
func runService(ctx context.Context, srv *Server, ln net.Listener, ro runOpts) error {
	o := service.Options{Log: srv.Log, HTTP: srv, Listener: ln, Snapshots: srv.Snapshots(),
		Changes: ro.Changes, Ping: ro.Ping, PingEvery: ro.PingEvery, Fleet: srv.Fleet(), Governor: srv.Governor()}
	if st := srv.Opts.Rollouts.Store; st != nil {
		o.Rollouts = rollouts.New(rollouts.Options{Store: st, Snapshot: srv.Snapshots().Current, Notify: srv.Notify,
			Leading: ro.Leading, Every: ro.Every, CountEvery: ro.CountEvery, DBTimeout: srv.Opts.DBTimeout,
			Counts: srv.Opts.Rollouts.Counts, Log: srv.Log})
		srv.Snapshots().Subscribe(o.Rollouts.Swapped)
	}
	return service.Run(ctx, o)
}

// runOnLoopback reloads srv and runs it (runService) on a fresh loopback
// port until the test ends; it returns the base URL. The one server-start
// helper of the end-to-end tests.
func runOnLoopback(t *testing.T, srv *Server, ro runOpts) string {
	t.Helper()
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- runService(ctx, srv, ln, ro) }()
	t.Cleanup(func() { stop(); <-ran })
	return "http://" + ln.Addr().String()
}
