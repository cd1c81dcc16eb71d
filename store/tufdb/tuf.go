// Package tufdb keeps the signed metadata in Postgres (docs/tuf.md):
// roots (published and pending), every role's bytes as published, the
// targets, the publications and the signer lock. *store.Store embeds its
// TUF, so callers see one store.
package tufdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
	"github.com/tidemark-dev/tidemark/store/lockdb"
)

// Signed answers (The Update Framework): the metadata as signed and the
// target files, kept so that every replica serves the same bytes and
// versions only grow.

// TUF is the signed metadata's part of the store.
type TUF struct {
	db    *pg.DB
	locks *lockdb.Locker
}

// New is the signed metadata's part of the store on db; locks takes the
// signer lock.
func New(db *pg.DB, locks *lockdb.Locker) *TUF { return &TUF{db: db, locks: locks} }

// tufLock serializes publications across replicas (pg_advisory_xact_lock).
const tufLock = 0x74756621 // "tuf!"

// InitTUF stores the first root; ErrState when one exists already.
func (s *TUF) InitTUF(ctx context.Context, root signed.Meta) error {
	return s.db.InTx(ctx, "store the first TUF root", func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `select count(*) from tuf_metadata where role = 'root'`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%w: a TUF root exists already (tidemark tuf rotate-root makes the next)", resolver.ErrState)
		}
		_, err := tx.Exec(ctx, `insert into tuf_metadata (role, version, body, expires_at) values ('root', $1, $2, $3)`, root.Version, root.Body, root.Expires)
		return err
	})
}

// AddTUFRoot stores the next root (version = the newest + 1, checked),
// pending when it waits for serve to run with the online key it names.
func (s *TUF) AddTUFRoot(ctx context.Context, root signed.Meta, pending bool) error {
	return s.db.InTx(ctx, "store the next TUF root", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1)`, tufLock); err != nil {
			return err
		}
		var newest int64
		if err := tx.QueryRow(ctx, `select coalesce(max(version), 0) from tuf_metadata where role = 'root'`).Scan(&newest); err != nil {
			return err
		}
		if root.Version != newest+1 {
			return fmt.Errorf("%w: root version %d is not the next (the newest is %d)", resolver.ErrConflict, root.Version, newest)
		}
		_, err := tx.Exec(ctx, `insert into tuf_metadata (role, version, body, expires_at, pending) values ('root', $1, $2, $3, $4)`,
			root.Version, root.Body, root.Expires, pending)
		return err
	})
}

// TUFMeta is role's metadata version (0: the newest) as served: a pending
// root is not; ErrNotFound when there is none.
func (s *TUF) TUFMeta(ctx context.Context, role string, version int64) (signed.Meta, error) {
	m := signed.Meta{Role: role}
	err := s.db.InTx(ctx, "read TUF metadata", func(tx pgx.Tx) error {
		q := `select version, body, expires_at from tuf_metadata where role = $1 and version = $2 and not pending`
		args := []any{role, version}
		if version == 0 {
			q, args = `select version, body, expires_at from tuf_metadata where role = $1 and not pending order by version desc limit 1`, []any{role}
		}
		err := tx.QueryRow(ctx, q, args...).Scan(&m.Version, &m.Body, &m.Expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no %s metadata version %d", resolver.ErrNotFound, role, version)
		}
		return err
	})
	return m, err
}

// TUFTarget is the target file at path with hash; ErrNotFound when none.
func (s *TUF) TUFTarget(ctx context.Context, path, hash string) ([]byte, error) {
	var b []byte
	err := s.db.InTx(ctx, "read a TUF target", func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `select body from tuf_targets where path = $1 and hash = $2`, path, hash).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no target %s with hash %s", resolver.ErrNotFound, path, hash)
		}
		return err
	})
	return b, err
}

// PublishTUF reads what is published and writes what build makes of it,
// in one transaction that no other replica's publication runs beside; a
// build that returns nil writes nothing.
func (s *TUF) PublishTUF(ctx context.Context, build func(signed.State) (*signed.Write, error)) (bool, error) {
	return s.publishTUF(ctx, nil, build)
}

func (s *TUF) publishTUF(ctx context.Context, as *signerPublication, build func(signed.State) (*signed.Write, error)) (bool, error) {
	wrote := false
	err := s.db.InTx(ctx, "publish TUF metadata", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select pg_advisory_xact_lock($1)`, tufLock); err != nil {
			return err
		}
		if as != nil {
			if err := as.check(ctx, tx); err != nil {
				return err
			}
		}
		st := signed.State{Channels: map[string]signed.Channel{}, Latest: map[string]signed.Meta{}}
		rows, err := tx.Query(ctx, `select channel, revision, content, path, hash, length from tuf_channels`)
		if err != nil {
			return err
		}
		var c signed.Channel
		if _, err := pgx.ForEachRow(rows, []any{&c.Channel, &c.Revision, &c.Content, &c.Path, &c.Hash, &c.Length}, func() error {
			st.Channels[c.Channel] = c
			return nil
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `select distinct on (role) role, version, body, expires_at, pending from tuf_metadata order by role, version desc`)
		if err != nil {
			return err
		}
		var m signed.Meta
		var pending bool
		if _, err := pgx.ForEachRow(rows, []any{&m.Role, &m.Version, &m.Body, &m.Expires, &pending}, func() error {
			if pending {
				st.Pending = &signed.Meta{Role: m.Role, Version: m.Version, Body: m.Body, Expires: m.Expires}
				return nil
			}
			st.Latest[m.Role] = m
			return nil
		}); err != nil {
			return err
		}
		if st.Pending != nil {
			// The served root is the newest that is not pending.
			var r signed.Meta
			r.Role = signed.Root
			if err := tx.QueryRow(ctx, `select version, body, expires_at from tuf_metadata where role = 'root' and not pending order by version desc limit 1`).
				Scan(&r.Version, &r.Body, &r.Expires); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if r.Version > 0 {
				st.Latest[signed.Root] = r
			}
		}
		w, err := build(st)
		if err != nil || w == nil {
			return err
		}
		for _, t := range w.Targets {
			if _, err := tx.Exec(ctx, `insert into tuf_targets (path, hash, body) values ($1, $2, $3) on conflict do nothing`, t.Path, t.Hash, t.Body); err != nil {
				return err
			}
		}
		for _, c := range w.Channels {
			if _, err := tx.Exec(ctx, `insert into tuf_channels (channel, revision, content, path, hash, length) values ($1, $2, $3, $4, $5, $6)
				on conflict (channel) do update set revision = excluded.revision, content = excluded.content, path = excluded.path,
				hash = excluded.hash, length = excluded.length`, c.Channel, c.Revision, c.Content, c.Path, c.Hash, c.Length); err != nil {
				return err
			}
		}
		if w.Activate > 0 {
			if _, err := tx.Exec(ctx, `update tuf_metadata set pending = false where role = 'root' and version = $1`, w.Activate); err != nil {
				return err
			}
		}
		for _, m := range w.Meta {
			if _, err := tx.Exec(ctx, `insert into tuf_metadata (role, version, body, expires_at) values ($1, $2, $3, $4)`, m.Role, m.Version, m.Body, m.Expires); err != nil {
				return err
			}
		}
		if as != nil {
			if err := as.record(ctx, tx, w); err != nil {
				return err
			}
		}
		// The last 100 versions of snapshot and targets are kept, with
		// what they name; older ones may go.
		if _, err := tx.Exec(ctx, `delete from tuf_metadata t where role in ('targets', 'snapshot', 'timestamp')
			and version <= (select max(version) - 100 from tuf_metadata where role = t.role)`); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}
