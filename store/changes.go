package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// newOrigin names one Store among the replicas sharing a database.
func newOrigin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// ListenChanges is Listen for consumers of the snapshot: each notification
// comes as the snapshot.Change it stands for, and those this Store sent
// itself are left out, because the process that made a change applies it
// when it makes it (a write reloads before it answers; the indexer calls its
// OnChange). A replica thus rebuilds its snapshot once per write, not twice.
// After every (re)connect fn gets Change{All: true}: what was sent while
// nobody listened is lost, so everything must be read again.
//
// Each change carries the store revision it was committed at; one this
// Store sent comes as that revision alone (Change{Revision: N}), so the
// snapshot can say which revision it includes without reading it again.
func (s *Store) ListenChanges(ctx context.Context, fn func(snapshot.Change)) error {
	return s.Listen(ctx, func(p string) {
		c, own := s.changeOf(p)
		if !own || c.Revision > 0 {
			fn(c)
		}
	})
}

// changeOf decodes a notification payload; own reports that this Store sent it.
func (s *Store) changeOf(p string) (c snapshot.Change, own bool) {
	var m map[string]string
	if err := json.Unmarshal([]byte(p), &m); err != nil {
		// Not ours to understand (another version of Tidemark?): read everything.
		return snapshot.Change{All: true}, false
	}
	rev, _ := strconv.ParseInt(m["rev"], 10, 64)
	if m["origin"] != "" && m["origin"] == s.origin {
		return snapshot.Change{Revision: rev}, true
	}
	switch m["kind"] {
	case "pin", "unpin", "rollout", "hold":
		return snapshot.Change{Channel: m["channel"], Revision: rev}, false
	case "block", "unblock", "scan", "digests", "gates", "risk":
		if m["source"] != "" {
			return snapshot.Change{Source: m["source"], Revision: rev}, false
		}
	}
	return snapshot.Change{All: true, Revision: rev}, false
}

// StoreRevision is the newest store revision committed: a snapshot read
// after it includes every change up to it.
func (s *Store) StoreRevision(ctx context.Context) (int64, error) {
	var n int64
	err := s.inTx(ctx, "read the store revision", func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `select n from store_revision`).Scan(&n)
	})
	return n, err
}
