// Package testutil holds the small helpers that tests in several packages
// need, so that each does not keep its own copy.
package testutil

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"sync"

	"github.com/jackc/pgx/v5"
)

// LockedBuffer collects output (log lines) written from several goroutines;
// String may be called while writers still write.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// FreshDatabase creates an empty database, named prefix plus a random
// suffix, on the server admin (a Postgres URL) points at, and returns its
// URL and a function that drops it. Benchmarks use it to start from
// nothing next to the database DATABASE_URL names.
func FreshDatabase(ctx context.Context, admin, prefix string) (string, func(), error) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	dbName := prefix + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	if _, err := conn.Exec(ctx, "create database "+dbName); err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		conn.Close(ctx)
		return "", nil, err
	}
	u.Path = "/" + dbName
	return u.String(), func() {
		_, _ = conn.Exec(ctx, "drop database if exists "+dbName+" with (force)")
		conn.Close(ctx)
	}, nil
}
