package server

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
)

// freezer is a TCP proxy in front of Postgres that can freeze: from then
// on it accepts connections and never answers, and the bytes of open ones
// go nowhere. A real Postgres cannot be made to do that on demand, and it
// is what a hung database host or a black-holing network looks like.
type freezer struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	done   chan struct{}
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, done: make(chan struct{})}
	go f.accept()
	return f
}

// stop closes every connection, so that a pool on the proxy closes at once.
func (f *freezer) stop() {
	close(f.done)
	f.ln.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		c.Close()
	}
}

func (f *freezer) keep(c net.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conns = append(f.conns, c)
}

func (f *freezer) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.keep(c)
		if f.frozen.Load() {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			c.Close()
			continue
		}
		f.keep(up)
		go f.pipe(c, up)
		go f.pipe(up, c)
	}
}

// pipe copies until frozen; then it holds whatever it read.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if f.frozen.Load() {
			<-f.done
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// TestFrozenDatabaseCostsARequestItsDeadline: with the database accepting
// connections and never answering, writes, token checks and history each
// answer 503 problem+json within their deadline instead of hanging.
func TestFrozenDatabaseCostsARequestItsDeadline(t *testing.T) {
	env := newPGEnv(t, Options{})
	u, err := url.Parse(env.url)
	if err != nil {
		t.Fatal(err)
	}
	f := newFreezer(t, u.Host)
	u.Host = f.ln.Addr().String()
	st := openStore(t, u.String())
	t.Cleanup(f.stop) // before st.Close, which would wait on frozen connections
	const deadline = 300 * time.Millisecond
	_, ts, _ := env.serve(st, Options{DBTimeout: deadline})
	// Through the proxy, while it still forwards, writes work.
	if res, body := do(t, env, ts, http.MethodPut, "/api/v1/sources/k3s/versions/v1.33.5-k3s1/block", "root", `{"reason":"r"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("block through the proxy before freezing: %d %s", res.StatusCode, body)
	}
	f.frozen.Store(true)

	for _, tc := range []struct{ method, path, token, body string }{
		{http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.5-k3s1"}`},
		{http.MethodDelete, "/api/v1/sources/k3s/versions/v1.33.5-k3s1/block", "root", ""},
		{http.MethodGet, "/api/v1/channels/v1.33/history", "", ""},
	} {
		t.Run(tc.method+" "+tc.path+" answers 503 in time", func(t *testing.T) {
			start := time.Now()
			res, body := do(t, env, ts, tc.method, tc.path, tc.token, tc.body)
			took := time.Since(start)
			if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s, want 503 problem+json", res.StatusCode, res.Header.Get("Content-Type"), body)
			}
			var p openapi.Problem
			if err := json.Unmarshal(body, &p); err != nil || !strings.Contains(p.Detail, "did not answer in time") {
				t.Errorf("detail %q (%v): want it to say the database did not answer in time", p.Detail, err)
			}
			if strings.Count(p.Detail, "authenticate") > 1 {
				t.Errorf("detail %q repeats itself", p.Detail)
			}
			if took > deadline+2*time.Second {
				t.Errorf("took %s with a %s deadline", took, deadline)
			}
		})
	}
}
