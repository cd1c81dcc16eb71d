package tufdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/store/lockdb"
)

// One signer: the replica holding the signer lock (lockdb) publishes, and
// each publication records the configuration digest and store revision it
// was computed from (migration 026).

type signerPublication struct {
	lock *lockdb.IndexerLock
	pub  signed.Publication
}

// SignerLock is the held signer lock: only its holder publishes signed
// metadata (TakeSignerLock).
type SignerLock struct {
	s    *TUF
	lock *lockdb.IndexerLock
}

// TakeSignerLock tries to become the one replica that signs; held false
// (and a nil lock) when another replica holds it.
func (s *TUF) TakeSignerLock(ctx context.Context) (*SignerLock, bool, error) {
	l, held, err := s.locks.TrySignerLock(ctx)
	if err != nil || !held {
		return nil, false, err
	}
	return &SignerLock{s: s, lock: l}, true, nil
}

// Lost is closed when the lock's session ended under it.
func (l *SignerLock) Lost() <-chan struct{} { return l.lock.Lost() }

// Release gives the lock up.
func (l *SignerLock) Release() { l.lock.Release() }

// PublishTUF is Store.PublishTUF under the lock, for pub: it checks, in
// the publication's transaction, that the lock's session still holds it
// (signed.ErrLockLost) and that pub's store revision is not older than
// the last publication's (signed.ErrBehind), and records pub.
func (l *SignerLock) PublishTUF(ctx context.Context, pub signed.Publication, build func(signed.State) (*signed.Write, error)) (bool, error) {
	return l.s.publishTUF(ctx, &signerPublication{lock: l.lock, pub: pub}, build)
}

func (p *signerPublication) check(ctx context.Context, tx pgx.Tx) error {
	class, obj := p.lock.Key()
	var held bool
	if err := tx.QueryRow(ctx, `select exists(select 1 from pg_locks where locktype = 'advisory' and granted
		and pid = $1 and classid = $2::int8::oid and objid = $3::int8::oid and objsubid = 1)`, int64(p.lock.PID()), class, obj).Scan(&held); err != nil {
		return err
	}
	if !held {
		return signed.ErrLockLost
	}
	var last int64
	err := tx.QueryRow(ctx, `select store_revision from tuf_publications order by timestamp_version desc limit 1`).Scan(&last)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if p.pub.StoreRevision < last {
		return fmt.Errorf("%w (revision %d, the last publication's %d)", signed.ErrBehind, p.pub.StoreRevision, last)
	}
	return nil
}

// record notes the publication w makes (its timestamp version).
func (p *signerPublication) record(ctx context.Context, tx pgx.Tx, w *signed.Write) error {
	var ts int64
	for _, m := range w.Meta {
		if m.Role == signed.Timestamp {
			ts = m.Version
		}
	}
	if ts == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `insert into tuf_publications (timestamp_version, config_digest, store_revision, replica) values ($1, $2, $3, $4)`,
		ts, p.pub.ConfigDigest, p.pub.StoreRevision, p.pub.Replica); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `delete from tuf_publications where timestamp_version <= $1 - 100`, ts)
	return err
}

// LastTUFPublication is the newest publication's record; ErrNotFound
// before the first.
func (s *TUF) LastTUFPublication(ctx context.Context) (signed.Publication, error) {
	var p signed.Publication
	err := s.db.InTx(ctx, "read the last TUF publication", func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `select timestamp_version, config_digest, store_revision, replica, published_at
			from tuf_publications order by timestamp_version desc limit 1`).Scan(&p.Timestamp, &p.ConfigDigest, &p.StoreRevision, &p.Replica, &p.At)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no signed publication yet", resolver.ErrNotFound)
		}
		return err
	})
	return p, err
}

// TUFRevisions is every channel's published revision.
func (s *TUF) TUFRevisions(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := s.db.InTx(ctx, "read TUF revisions", func(tx pgx.Tx) error {
		clear(out)
		rows, err := tx.Query(ctx, `select channel, revision from tuf_channels`)
		if err != nil {
			return err
		}
		var ch string
		var rev int64
		_, err = pgx.ForEachRow(rows, []any{&ch, &rev}, func() error {
			out[ch] = rev
			return nil
		})
		return err
	})
	return out, err
}

// NewestTUFRoot is the newest root, pending or not: the one whose online
// key a signer must hold. ErrNotFound before tuf init.
func (s *TUF) NewestTUFRoot(ctx context.Context) (signed.Meta, error) {
	return s.rootBy(ctx, `select version, body, expires_at from tuf_metadata where role = 'root' order by version desc limit 1`,
		"no TUF root: run tidemark tuf init (after tidemark migrate)")
}
