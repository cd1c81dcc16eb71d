package pg_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark-dev/tidemark/store/internal/pg"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// countingTracer counts the batches and the queries sent outside them.
type countingTracer struct{ batches, queries atomic.Int32 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}
func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *countingTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return ctx
}
func (c *countingTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *countingTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TestReadBatchIsOneRoundTrip: a read batch's BEGIN, queries and COMMIT
// go in one batch and nothing else is sent; the transaction is repeatable
// read (its queries see one snapshot); a failing query fails the batch
// and hands the pool's one connection back idle, out of the aborted
// transaction, for the next batch.
func TestReadBatchIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(storetest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	tr := &countingTracer{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	db := &pg.DB{Pool: pool, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

	var iso string
	var a, b int
	err = db.ReadBatch(ctx, "read", opts, func(bt *pgx.Batch) {
		bt.Queue(`select current_setting('transaction_isolation')`).QueryRow(func(r pgx.Row) error { return r.Scan(&iso) })
		bt.Queue(`select 1`).QueryRow(func(r pgx.Row) error { return r.Scan(&a) })
		bt.Queue(`select 2`).QueryRow(func(r pgx.Row) error { return r.Scan(&b) })
	})
	if err != nil || iso != "repeatable read" || a != 1 || b != 2 {
		t.Fatalf("batch: %v, isolation %q, results %d %d", err, iso, a, b)
	}
	if n, q := tr.batches.Load(), tr.queries.Load(); n != 1 || q != 0 {
		t.Errorf("%d batches and %d queries apart sent, want 1 and 0 (the COMMIT in the batch)", n, q)
	}

	err = db.ReadBatch(ctx, "read", opts, func(bt *pgx.Batch) {
		bt.Queue(`select 1/0`).Exec(func(pgconn.CommandTag) error { return nil })
		bt.Queue(`select 1`).QueryRow(func(r pgx.Row) error { return r.Scan(&a) })
	})
	if err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("failing batch: %v, want division by zero", err)
	}
	err = db.ReadBatch(ctx, "read", opts, func(bt *pgx.Batch) {
		bt.Queue(`select 3`).QueryRow(func(r pgx.Row) error { return r.Scan(&a) })
	})
	if err != nil || a != 3 {
		t.Fatalf("a batch after a failed one: %v, %d", err, a)
	}
	// A connection left in the aborted transaction would have been
	// destroyed on release and replaced.
	if n := pool.Stat().NewConnsCount(); n != 1 {
		t.Errorf("%d connections made, want 1: the failed batch's was not handed back idle", n)
	}
}
