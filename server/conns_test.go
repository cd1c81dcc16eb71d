package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/connlimit"
)

// TestOneAddressHoldingConnectionsStarvesNoOne: an address holding idle
// keep-alive connections up to its limit gets its next one closed at once,
// while another address is answered; idle connections are closed after
// the idle timeout; both series are on /metrics.
func TestOneAddressHoldingConnectionsStarvesNoOne(t *testing.T) {
	const perAddress = 8
	snap := k3sSnapshot(t)
	srv, err := New(Options{
		Load:        func(context.Context) (*snapshot.Snapshot, error) { return snap, nil },
		Connections: connlimit.Options{PerAddress: perAddress},
		IdleTimeout: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	base := runOnLoopback(t, srv, runOpts{})
	hostport := strings.TrimPrefix(base, "http://")

	// ask sends one keep-alive request on c and says whether it was answered.
	ask := func(c net.Conn, r *bufio.Reader) bool {
		if c == nil {
			return false
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /v1-release/channels/k3s-released HTTP/1.1\r\nHost: %s\r\n\r\n", hostport); err != nil {
			return false
		}
		res, err := http.ReadResponse(r, nil)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode == http.StatusFound
	}
	dial := func(from string) (net.Conn, *bufio.Reader) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 2 * time.Second}
		c, err := d.Dial("tcp", hostport)
		if err != nil {
			// A refused connection may be reset before the dial returns.
			t.Logf("dial from %s: %v", from, err)
			return nil, nil
		}
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	}

	type held struct {
		c net.Conn
		r *bufio.Reader
	}
	var conns []held
	for i := range perAddress {
		c, r := dial("127.0.0.2")
		if !ask(c, r) {
			t.Fatalf("connection %d of %d from one address was not answered", i+1, perAddress)
		}
		conns = append(conns, held{c, r})
	}
	if c, r := dial("127.0.0.2"); ask(c, r) {
		t.Fatalf("connection %d from one address was answered, want it closed at once", perAddress+1)
	}
	start := time.Now()
	if c, r := dial("127.0.0.3"); !ask(c, r) {
		t.Fatal("another address was not answered while one address held its limit")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("another address waited %s", took)
	}
	metrics := metricsText(t, base)
	for _, want := range []string{`tidemark_connections_refused_total{reason="address"} 1`, `tidemark_connections_refused_total{reason="total"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if !strings.Contains(metrics, "tidemark_connections_open ") {
		t.Error("/metrics lacks tidemark_connections_open")
	}

	// Idle past the timeout: the server closes them, and their slots are
	// free again.
	time.Sleep(800 * time.Millisecond)
	_ = conns[0].c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := conns[0].r.ReadByte(); err == nil {
		t.Fatal("an idle connection was not closed after the idle timeout")
	}
	if c, r := dial("127.0.0.2"); !ask(c, r) {
		t.Fatal("after the idle connections were closed, the address was still refused")
	}
}
