package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/tokendb"
)

// Enrolled clusters (fleet.enrollment): one key per cluster ID, shown once,
// only its SHA-256 kept. Replicas keep every valid hash in memory and hear
// of a change on EnrollmentChannel.

// EnrollmentChannel is the NOTIFY channel that announces an enrollment or
// a revocation; it is not NotifyChannel, so a new key reloads the keys
// and never the snapshot.
const EnrollmentChannel = "tidemark_enrollments"

// Enroll makes a key for cluster id and returns it: tdm_ and 43 random
// characters (32 bytes, base64url), which exist only in this return value.
// channels are those its URLs are printed for. ErrState when id is
// enrolled already (revoke it first); an ID revoked before is enrolled
// anew with a new key.
func (s *Store) Enroll(ctx context.Context, id string, channels []string) (string, error) {
	if !resolver.ValidClusterID(id) {
		return "", fmt.Errorf("%w: cluster ID %q: want 1-128 of A-Z a-z 0-9 . _ : -", resolver.ErrInvalid, id)
	}
	if channels == nil {
		channels = []string{}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("enroll cluster %q: %w", id, err)
	}
	key := tokendb.TokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	hash := sha256.Sum256([]byte(key))
	err := s.inTx(ctx, fmt.Sprintf("enroll cluster %q", id), func(tx pgx.Tx) error {
		var got string
		err := tx.QueryRow(ctx, `insert into cluster_enrollments as e (id, hash, channels) values ($1, $2, $3)
			on conflict (id) do update set hash = excluded.hash, channels = excluded.channels, created_at = now(), revoked_at = null
			where e.revoked_at is not null
			returning id`, id, hash[:], channels).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: cluster %q is enrolled already; tidemark cluster revoke %s, then enroll it again for a new key", resolver.ErrState, id, id)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "select pg_notify($1, $2)", EnrollmentChannel, id)
		return err
	})
	if err != nil {
		return "", err
	}
	return key, nil
}

// RevokeEnrollment ends cluster id's key; ErrNotFound when it was never
// enrolled. Revoking a revoked one is a no-op.
func (s *Store) RevokeEnrollment(ctx context.Context, id string) error {
	return s.inTx(ctx, fmt.Sprintf("revoke cluster %q", id), func(tx pgx.Tx) error {
		var got string
		err := tx.QueryRow(ctx, `update cluster_enrollments set revoked_at = coalesce(revoked_at, now()) where id = $1 returning id`, id).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: cluster %q was never enrolled", resolver.ErrNotFound, id)
		}
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "select pg_notify($1, $2)", EnrollmentChannel, id)
		return err
	})
}

// EnrolledKeys is every valid key's hash: what a replica keeps in memory.
func (s *Store) EnrolledKeys(ctx context.Context) ([]resolver.EnrolledKey, error) {
	var out []resolver.EnrolledKey
	err := s.inTx(ctx, "read enrolled keys", func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `select id, hash from cluster_enrollments where revoked_at is null`)
		if err != nil {
			return err
		}
		var k resolver.EnrolledKey
		var h []byte
		_, err = pgx.ForEachRow(rows, []any{&k.ID, &h}, func() error {
			copy(k.Hash[:], h)
			out = append(out, k)
			return nil
		})
		return err
	})
	return out, err
}

// ListenEnrollments calls fn after every enrollment or revocation (from
// any replica or the CLI), and each time it starts listening (a change
// may have been missed), until ctx ends.
func (s *Store) ListenEnrollments(ctx context.Context, fn func()) error {
	return s.listen(ctx, EnrollmentChannel, func(string) { fn() })
}
