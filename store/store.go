// Package store keeps Tidemark's index, channel state, blocks, tokens and
// audit trail in Postgres through pgx. Every exported method takes ctx first,
// runs in one transaction, and speaks resolver types; errors wrap the
// resolver taxonomy (ErrNotFound, ErrConflict, ErrUnavailable, ...).
//
// The signatures in this file are the contract other packages build against;
// bodies marked TODO(store) are being written.
package store

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

var errTODO = errors.New("TODO(store): not implemented yet")

// Store is a handle on the database. Safe for concurrent use.
type Store struct {
	log *slog.Logger
}

// Open connects to url and checks the connection. The error is one line that
// names host:port and the cause (never the password) and wraps
// resolver.ErrUnavailable.
func Open(ctx context.Context, url string, log *slog.Logger) (*Store, error) { return nil, errTODO }

// Close releases the pool.
func (s *Store) Close() {}

// Migrate applies migrations/ under a Postgres advisory lock, so that several
// replicas may start at once.
func (s *Store) Migrate(ctx context.Context) error { return errTODO }

// SyncSources records the configured sources (names, images, schemes).
// Sources no longer configured are kept, with their history.
func (s *Store) SyncSources(ctx context.Context, sources []resolver.Source) error { return errTODO }

// ScanResult is what one indexing run of one source found.
type ScanResult struct {
	Source   string
	Started  time.Time
	Finished time.Time
	// Complete is true when the whole tag list was read. Only a complete
	// listing marks missing tags absent; an incomplete one changes no tags.
	Complete bool
	Tags     []resolver.Tag // classified tags from the listing (excluded tags already dropped)
	Err      error          // non-nil: the scan failed; its text is recorded, tags are untouched
	Requests int            // registry requests made
}

// ApplyScan writes one scan in one transaction: COPY the tags into a temp
// table, merge them (new tags, last_seen, present), mark tags absent that a
// complete listing no longer has (never delete), insert the scan row, and
// NOTIFY. It returns the recorded scan with its counts.
func (s *Store) ApplyScan(ctx context.Context, r ScanResult) (resolver.Scan, error) {
	return resolver.Scan{}, errTODO
}

// TagsWithoutDigest lists present tags of source whose digest is unknown.
func (s *Store) TagsWithoutDigest(ctx context.Context, source string) ([]string, error) {
	return nil, errTODO
}

// SetDigests records digests for tags of source. A tag whose digest differs
// from the stored one is a re-tag: the old digest moves to previous_digest.
func (s *Store) SetDigests(ctx context.Context, source string, digests map[string]string) error {
	return errTODO
}

// Load reads everything the server needs to answer, in one pass: present tags
// per source, blocks, last scans, and channel state (keyed by channel name).
func (s *Store) Load(ctx context.Context, sources []resolver.Source) ([]resolver.SourceData, map[string]resolver.ChannelState, error) {
	return nil, nil, errTODO
}

// Listen calls fn with the payload of every change notification (from this
// or any other replica) until ctx ends, reconnecting by itself.
func (s *Store) Listen(ctx context.Context, fn func(payload string)) error { return errTODO }

// IndexerLock tries to become the one indexing replica: a session-level
// advisory lock on a dedicated connection. held reports whether this process
// holds it; release gives it up. If the holder dies, its connection closes and
// the lock is free for the next TryIndexerLock.
func (s *Store) TryIndexerLock(ctx context.Context) (release func(), held bool, err error) {
	return nil, false, errTODO
}
