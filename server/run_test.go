package server

import (
	"context"
	"net"
	"testing"
)

// runOnLoopback reloads srv and runs it (Run: the HTTP server and every
// leader loop) on a fresh loopback port until the test ends; it returns the
// base URL. The one server-start helper of the end-to-end tests.
func runOnLoopback(t *testing.T, srv *Server, ro RunOptions) string {
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
	go func() { ran <- srv.Run(ctx, ln, ro) }()
	t.Cleanup(func() { stop(); <-ran })
	return "http://" + ln.Addr().String()
}
