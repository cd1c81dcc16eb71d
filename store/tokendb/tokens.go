// Package tokendb keeps Tidemark's bearer tokens in Postgres: creation
// (the plaintext shown once, only its hash stored), authentication,
// listing and revocation. *store.Store embeds its Tokens.
package tokendb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store/internal/pg"
)

// Tokens is the tokens' part of the store.
type Tokens struct{ db *pg.DB }

// New is the tokens' part of the store on db.
func New(db *pg.DB) *Tokens { return &Tokens{db: db} }

// Scopes a token may carry (CONTRACT section 3): admin implies the others.
var Scopes = []string{"promote", "scan", "read", "admin"}

// TokenPrefix starts every token, so that a leaked one is easy to find
// (secret scanners) and a wrong kind of credential is refused early.
const TokenPrefix = "tdm_"

// Token is an API token as stored; the plaintext is never kept.
type Token struct {
	ID        int64
	Name      string
	Scopes    []string
	Channels  []string // globs a channel write must match; empty: any
	CreatedAt time.Time
	LastUsed  time.Time // zero: never used
	RevokedAt time.Time // zero: valid
}

// CreateToken makes a token named name with scopes and returns its
// plaintext, which exists only in this return value: the database keeps its
// SHA-256. ErrConflict when the name is taken (revoked tokens keep theirs).
func (s *Tokens) CreateToken(ctx context.Context, name string, scopes []string) (string, error) {
	return s.CreateChannelToken(ctx, name, scopes, nil)
}

// CreateChannelToken is CreateToken for a token whose channel writes are
// limited to channels (names or globs); nil: every channel.
func (s *Tokens) CreateChannelToken(ctx context.Context, name string, scopes, channels []string) (string, error) {
	for _, g := range channels {
		if !resolver.ValidChannelGlob(g) {
			return "", fmt.Errorf("%w: token %q: channels: %q is not a channel name or glob", resolver.ErrInvalid, name, g)
		}
	}
	if channels == nil {
		channels = []string{}
	}
	if strings.TrimSpace(name) == "" {
		return "", fmt.Errorf("%w: token name is empty", resolver.ErrInvalid)
	}
	if len(scopes) == 0 {
		return "", fmt.Errorf("%w: token %q: no scope (want %s)", resolver.ErrInvalid, name, strings.Join(Scopes, ", "))
	}
	for _, sc := range scopes {
		if !slices.Contains(Scopes, sc) {
			return "", fmt.Errorf("%w: token %q: unknown scope %q (want %s)", resolver.ErrInvalid, name, sc, strings.Join(Scopes, ", "))
		}
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", fmt.Errorf("create token %q: %w", name, err)
	}
	plain := TokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	hash := sha256.Sum256([]byte(plain))
	err := s.db.InTx(ctx, fmt.Sprintf("create token %q", name), func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `insert into tokens (name, hash, scopes, channels) values ($1, $2, $3, $4)
			on conflict (name) do nothing returning id`, name, hash[:], scopes, channels).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: token %q already exists (a revoked token keeps its name); choose another name", resolver.ErrConflict, name)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return plain, nil
}

// Authenticate finds the valid token whose plaintext this is, records its
// use and returns it as a principal (name, scopes, channels): what the
// server acts on. Unknown, malformed and revoked tokens are all ErrUnauthorized with
// the same text, so a caller learns nothing from the difference.
//
// A failed lookup only reads: a guessed token must not cost a database
// write. A valid one records last_used at most once a minute, which is
// what `token list` shows, without a write per request.
func (s *Tokens) Authenticate(ctx context.Context, plaintext string) (resolver.Principal, error) {
	denied := fmt.Errorf("%w: unknown or revoked token", resolver.ErrUnauthorized)
	if !strings.HasPrefix(plaintext, TokenPrefix) {
		return resolver.Principal{}, denied
	}
	hash := sha256.Sum256([]byte(plaintext))
	var (
		t      Token
		stored []byte
	)
	err := s.db.InTx(ctx, "authenticate", func(tx pgx.Tx) error {
		// The lookup is by hash, so timing reveals nothing about the secret;
		// the constant-time compare below is belt and braces.
		var stale bool
		err := tx.QueryRow(ctx, `
			select id, name, hash, scopes, channels, created_at, coalesce(last_used, 'epoch'),
				last_used is null or last_used < now() - interval '1 minute'
			from tokens where hash = $1 and revoked_at is null`, hash[:]).
			Scan(&t.ID, &t.Name, &stored, &t.Scopes, &t.Channels, &t.CreatedAt, &t.LastUsed, &stale)
		if errors.Is(err, pgx.ErrNoRows) {
			return denied
		}
		if err != nil {
			return err
		}
		if subtle.ConstantTimeCompare(stored, hash[:]) != 1 {
			return denied
		}
		if !stale {
			return nil // used within the minute: recorded already
		}
		return tx.QueryRow(ctx, `update tokens set last_used = now() where id = $1 returning last_used`, t.ID).Scan(&t.LastUsed)
	})
	if err != nil {
		return resolver.Principal{}, err
	}
	return resolver.Principal{Name: t.Name, Identity: "token:" + t.Name, Scopes: t.Scopes, Channels: t.Channels}, nil
}

// ListTokens lists every token, revoked ones included, by name.
func (s *Tokens) ListTokens(ctx context.Context) ([]Token, error) {
	tokens := []Token{}
	err := s.db.InTx(ctx, "list tokens", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			select id, name, scopes, channels, created_at, coalesce(last_used, 'epoch'), coalesce(revoked_at, 'epoch')
			from tokens order by name`)
		if err != nil {
			return err
		}
		var t Token
		_, err = pgx.ForEachRow(rows, []any{&t.ID, &t.Name, &t.Scopes, &t.Channels, &t.CreatedAt, &t.LastUsed, &t.RevokedAt}, func() error {
			c := t
			c.LastUsed, c.RevokedAt = unEpoch(c.LastUsed), unEpoch(c.RevokedAt)
			tokens = append(tokens, c)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return tokens, nil
}

// RevokeToken revokes the token named name; ErrNotFound when there is none.
// Revoking a revoked token is a no-op.
func (s *Tokens) RevokeToken(ctx context.Context, name string) error {
	return s.db.InTx(ctx, fmt.Sprintf("revoke token %q", name), func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `
			update tokens set revoked_at = coalesce(revoked_at, now()) where name = $1 returning id`, name).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no token named %q", resolver.ErrNotFound, name)
		}
		return err
	})
}

func unEpoch(t time.Time) time.Time {
	if t.Equal(time.Unix(0, 0)) {
		return time.Time{}
	}
	return t
}
