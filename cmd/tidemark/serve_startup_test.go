package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver"
)

// silentDatabase accepts connections and never answers, as a frozen
// Postgres (SIGSTOP, a dead disk) does.
func silentDatabase(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

func TestServeFailsWithOneLineWhenTheDatabaseNeverAnswers(t *testing.T) {
	addr := silentDatabase(t)
	cfg := &config.Config{File: "t.yaml", Listen: "127.0.0.1:0",
		DatabaseURL: "postgres://u:secret@" + addr + "/db?sslmode=disable&connect_timeout=1"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err := serve(ctx, cfg, log, false, func(string) string { return "" }, nil)
	took := time.Since(start)
	want := "database " + addr + " did not answer within 1s"
	if err == nil || err.Error() != want {
		t.Fatalf("serve = %v, want %q", err, want)
	}
	if !errors.Is(err, resolver.ErrUnavailable) {
		t.Errorf("err does not wrap ErrUnavailable")
	}
	if took > 5*time.Second {
		t.Errorf("serve took %s to give up, want about 1s", took)
	}
}
