package pg

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB runs transactions on a pool: what every part of the store shares.
type DB struct {
	Pool *pgxpool.Pool
	Log  *slog.Logger
}

// InTx runs fn in a read-write transaction; op names the work in errors.
func (d *DB) InTx(ctx context.Context, op string, fn func(tx pgx.Tx) error) error {
	return d.InTxOpts(ctx, op, pgx.TxOptions{}, fn)
}

// InTxOpts runs fn in a transaction with opts. A pooled connection whose
// session ended while idle (a database restart, pg_terminate_backend)
// fails its BEGIN; the pool is reset once and the BEGIN retried. Every
// error comes back through Err: one line, in the resolver taxonomy.
func (d *DB) InTxOpts(ctx context.Context, op string, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	tx, err := d.Pool.BeginTx(ctx, opts)
	if err != nil && ConnLost(err) && ctx.Err() == nil {
		d.Log.WarnContext(ctx, "database connection lost; reconnecting", "op", op, "err", Cause(err))
		d.Pool.Reset()
		tx, err = d.Pool.BeginTx(ctx, opts)
	}
	if err != nil {
		return Err(op, err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if err := fn(tx); err != nil {
		return Err(op, err)
	}
	return Err(op, tx.Commit(ctx))
}

// ReadBatch runs the queries build queues, with their callbacks, in one
// transaction with opts that the batch itself begins and ends: the BEGIN,
// every query and the COMMIT go to Postgres in one round trip, where a
// transaction of six reads took eight. A lost connection (a database
// restart) retries the whole batch once on a reset pool, so build is
// called again and must start from nothing. Every error comes back
// through Err.
func (d *DB) ReadBatch(ctx context.Context, op string, opts pgx.TxOptions, build func(b *pgx.Batch)) error {
	err := d.readBatch(ctx, opts, build)
	if err != nil && ConnLost(err) && ctx.Err() == nil {
		d.Log.WarnContext(ctx, "database connection lost; reconnecting", "op", op, "err", Cause(err))
		d.Pool.Reset()
		err = d.readBatch(ctx, opts, build)
	}
	return Err(op, err)
}

func (d *DB) readBatch(ctx context.Context, opts pgx.TxOptions, build func(b *pgx.Batch)) error {
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.BeginTx(opts)
	build(b)
	b.Queue("commit")
	br := conn.SendBatch(ctx, b)
	// After a statement's error Postgres skips the rest of the batch, the
	// COMMIT too, and the transaction stays open, aborted: the deferred
	// Rollback ends it. When the COMMIT ran, pgx saw the connection idle
	// at Close and the Rollback sends nothing.
	defer func() { _ = br.Tx().Rollback(ctx) }()
	return br.Close()
}
