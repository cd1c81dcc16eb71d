package server

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestSlowClientsAreCutOff: a client that trickles its headers or a
// declared body, a byte at a time, loses its connection at the read
// deadline instead of holding it (and a goroutine) for as long as it likes.
func TestSlowClientsAreCutOff(t *testing.T) {
	const readTimeout = 300 * time.Millisecond
	s, err := New(Options{ReadTimeout: readTimeout, Load: func(context.Context) (*snapshot.Snapshot, error) { return k3sSnapshot(t), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })

	for _, tc := range []struct{ name, head, trickle string }{
		{"trickled body", "PUT /api/v1/channels/stable/pin HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n",
			strings.Repeat(" ", 200)},
		{"trickled headers", "GET /api/v1/channels HTTP/1.1\r\n", strings.Repeat("X-Slow: 1\r\n", 40)},
	} {
		t.Run(tc.name+" is cut off at the read deadline", func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, tc.head); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			go func() {
				for i := range len(tc.trickle) {
					if _, err := conn.Write([]byte{tc.trickle[i]}); err != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
			// The server answers (or not) and closes; reading to EOF says so.
			// The whole trickle would take 10 s and more.
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.Copy(io.Discard, conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("connection still open after %s with a %s read deadline", time.Since(start), readTimeout)
			}
			if took := time.Since(start); took > readTimeout+2*time.Second {
				t.Errorf("cut off after %s, want about %s", took, readTimeout)
			}
		})
	}
}
