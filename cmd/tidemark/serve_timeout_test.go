package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestServeTakesReadTimeoutFromTheFile: read_timeout in the configuration
// reaches the HTTP server: a client trickling its headers is cut off at it.
func TestServeTakesReadTimeoutFromTheFile(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "tidemark.yaml")
	if err := os.WriteFile(cfgPath, []byte("read_timeout: 500ms\ndatabase_timeout: 2s\n"+e2eConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "TIDEMARK_LISTEN": addr}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	logs := &testutil.LockedBuffer{}
	go func() {
		done <- Main(ctx, []string{"serve", "--no-index", "--config", cfgPath}, strings.NewReader(""), logs, logs, func(k string) string { return env[k] })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not ready:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	go func() {
		for _, b := range []byte("GET /readyz HTTP/1.1\r\n" + strings.Repeat("X-Slow: 1\r\n", 40)) {
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(8 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after %s with read_timeout 500ms", time.Since(start))
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("cut off after %s, want about 500ms (the default is 10s for headers)", took)
	}
}
