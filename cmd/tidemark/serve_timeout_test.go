package main

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestServeTakesReadTimeoutFromTheFile: read_timeout in the configuration
// reaches the HTTP server: a client trickling its headers is cut off at it.
func TestServeTakesReadTimeoutFromTheFile(t *testing.T) {
	c := startServeWith(t, "read_timeout: 500ms\ndatabase_timeout: 2s\n"+e2eConfig)
	conn, err := net.Dial("tcp", c.env["TIDEMARK_LISTEN"])
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
