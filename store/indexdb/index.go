// Package indexdb keeps what the indexer finds in Postgres: a listing's
// tags merged in one transaction (ApplyScan, with the listing's fingerprint
// to skip an unchanged one), tags pushed and deleted one at a time, digests,
// and the accounting of a scan's requests. *store.Store embeds its Index, so
// callers see one store.
package indexdb

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// Notify queues a change notification in tx, delivered on commit
// (store.Store's notify).
type Notify func(ctx context.Context, tx pgx.Tx, kind, source string, kv ...string) error

// Index is the index's part of the store.
type Index struct {
	db     *pg.DB
	notify Notify
	groups listingGroups // complete listings waiting to be recorded together
	// perCommit is how many scans each transaction that records scans
	// recorded: a group's listings, or 1 for a scan recorded alone.
	perCommit prometheus.Histogram
}

// New is the index's part of the store on db; notify announces changes.
func New(db *pg.DB, notify Notify) *Index {
	return &Index{db: db, notify: notify, perCommit: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "tidemark_store_scans_per_commit",
		Help:    "Scans recorded by one database transaction: complete listings that arrive together share one (first and unchanged listings), any other scan is recorded alone (1).",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
	})}
}

// Collectors are the index's metrics, for the process's registry.
func (s *Index) Collectors() []prometheus.Collector { return []prometheus.Collector{s.perCommit} }

func (s *Index) inTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return s.db.InTx(ctx, op, fn)
}
