package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Console sessions and the key that seals their cookies (CONTRACT section
// 16): a session is a row, so a logout on one replica ends it on all at
// once.

// SecretKey is the named key Tidemark made (32 random bytes), made now
// when there is none; replicas racing to make it agree on the first.
func (s *Store) SecretKey(ctx context.Context, name string) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var key []byte
	err := s.inTx(ctx, fmt.Sprintf("read key %q", name), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `insert into secret_keys (name, key) values ($1, $2) on conflict (name) do nothing`, name, fresh); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `select key from secret_keys where name = $1`, name).Scan(&key)
	})
	return key, err
}

// CreateSession records a new session.
func (s *Store) CreateSession(ctx context.Context, v resolver.Session) error {
	p := v.Principal
	return s.inTx(ctx, "create a session", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `insert into console_sessions (id_hash, identity, name, scopes, channels, refresh_token, trust_until, expires_at)
			values ($1, $2, $3, $4, $5, $6, $7, $8)`,
			v.IDHash, p.ID(), p.Name, nonNil(p.Scopes), nonNil(p.Channels), v.RefreshToken, v.TrustUntil, v.ExpiresAt)
		return err
	})
}

// UseSession is the live session with idHash, its last request moved to
// now: ErrUnauthorized when there is none, it was revoked, it is past its
// end, or it was idle for idle or longer.
func (s *Store) UseSession(ctx context.Context, idHash []byte, idle time.Duration) (resolver.Session, error) {
	var v resolver.Session
	err := s.inTx(ctx, "use a session", func(tx pgx.Tx) error {
		var identity string
		err := tx.QueryRow(ctx, `update console_sessions set last_seen = now()
			where id_hash = $1 and revoked_at is null and expires_at > now() and last_seen > now() - $2::interval
			returning identity, name, scopes, channels, refresh_token, trust_until, created_at, last_seen, expires_at`,
			idHash, idle).Scan(&identity, &v.Principal.Name, &v.Principal.Scopes, &v.Principal.Channels, &v.RefreshToken,
			&v.TrustUntil, &v.CreatedAt, &v.LastSeen, &v.ExpiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no live session (signed out, idle for %s, or past its end)", resolver.ErrUnauthorized, idle)
		}
		v.Principal.Identity, v.Principal.Person = identity, true
		if len(v.Principal.Channels) == 0 {
			v.Principal.Channels = nil
		}
		return err
	})
	v.IDHash = idHash
	return v, err
}

// RenewSession keeps what a refresh with the provider said of a session.
func (s *Store) RenewSession(ctx context.Context, v resolver.Session) error {
	p := v.Principal
	return s.inTx(ctx, "renew a session", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `update console_sessions set name = $2, scopes = $3, channels = $4, refresh_token = $5, trust_until = $6
			where id_hash = $1 and revoked_at is null`,
			v.IDHash, p.Name, nonNil(p.Scopes), nonNil(p.Channels), v.RefreshToken, v.TrustUntil)
		return err
	})
}

// RevokeSession ends a session (a logout, a refused refresh).
func (s *Store) RevokeSession(ctx context.Context, idHash []byte) error {
	return s.inTx(ctx, "end a session", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `update console_sessions set revoked_at = now() where id_hash = $1 and revoked_at is null`, idHash)
		return err
	})
}

// PurgeSessions deletes sessions that ended before cutoff.
func (s *Store) PurgeSessions(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, "purge ended sessions", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `delete from console_sessions where expires_at < $1`, cutoff)
		n = tag.RowsAffected()
		return err
	})
	return n, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
