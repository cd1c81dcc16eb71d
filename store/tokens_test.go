package store_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/tokendb"
)

func TestTokens(t *testing.T) {
	st, u := newStore(t)
	ctx := context.Background()
	plain, err := st.CreateToken(ctx, "ci", []string{"promote"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain, tokendb.TokenPrefix) || len(plain) < 40 {
		t.Errorf("token %q: want tdm_ and 32 random bytes", plain)
	}
	if n := query(t, u, `select count(*) from tokens where position(convert_to($1, 'UTF8') in hash) > 0 or hash = convert_to($1, 'UTF8')`, plain)[0][0].(int64); n != 0 {
		t.Error("the plaintext is stored")
	}

	p, err := st.Authenticate(ctx, plain)
	if err != nil || p.Name != "ci" || !slices.Equal(p.Scopes, []string{"promote"}) || p.Limited() {
		t.Fatalf("Authenticate = %+v, %v", p, err)
	}
	if tokens, err := st.ListTokens(ctx); err != nil || len(tokens) != 1 || tokens[0].LastUsed.IsZero() {
		t.Fatalf("after Authenticate, ListTokens = %+v, %v; want last_used set", tokens, err)
	}
	admin, err := st.CreateToken(ctx, "root", []string{"admin"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := st.Authenticate(ctx, admin); err != nil || !slices.Equal(p.Scopes, []string{"admin"}) {
		t.Errorf("admin token scopes = %q, %v; want admin (which the server reads as every scope)", p.Scopes, err)
	}
	limited, err := st.CreateChannelToken(ctx, "alertmanager", []string{"promote"}, []string{"stable", "v1.*"})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := st.Authenticate(ctx, limited); err != nil || !slices.Equal(p.Channels, []string{"stable", "v1.*"}) ||
		!p.MayWriteChannel("v1.33") || p.MayWriteChannel("latest") {
		t.Errorf("limited token = %+v, %v; want channels stable and v1.*", p, err)
	}

	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"duplicate name conflicts", errOf(st.CreateToken(ctx, "ci", []string{"scan"})), resolver.ErrConflict},
		{"unknown scope is invalid", errOf(st.CreateToken(ctx, "x", []string{"root"})), resolver.ErrInvalid},
		{"no scope is invalid", errOf(st.CreateToken(ctx, "x", nil)), resolver.ErrInvalid},
		{"empty name is invalid", errOf(st.CreateToken(ctx, " ", []string{"scan"})), resolver.ErrInvalid},
		{"a bad channel glob is invalid", errOf(st.CreateChannelToken(ctx, "x", []string{"promote"}, []string{"v1.["})), resolver.ErrInvalid},
		{"wrong token is unauthorized", authErr(st.Authenticate(ctx, plain+"x")), resolver.ErrUnauthorized},
		{"token without prefix is unauthorized", authErr(st.Authenticate(ctx, strings.TrimPrefix(plain, "tdm_"))), resolver.ErrUnauthorized},
		{"empty token is unauthorized", authErr(st.Authenticate(ctx, "")), resolver.ErrUnauthorized},
		{"revoking an unknown token is not found", st.RevokeToken(ctx, "nobody"), resolver.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("err = %v, want %v", tt.err, tt.want)
			}
		})
	}

	// The constraint's name is the database's business, not the user's.
	if _, err := st.CreateToken(ctx, "ci", []string{"scan"}); err == nil || !strings.Contains(err.Error(), `token "ci" already exists`) || strings.Contains(err.Error(), "tokens_name_key") {
		t.Errorf("duplicate name: %v, want it to say the token already exists", err)
	}
	if err := st.RevokeToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, "ci"); err != nil {
		t.Errorf("second revoke: %v", err)
	}
	if _, err := st.Authenticate(ctx, plain); !errors.Is(err, resolver.ErrUnauthorized) {
		t.Errorf("revoked token: err = %v, want ErrUnauthorized", err)
	}
	list, err := st.ListTokens(ctx)
	if err != nil || len(list) != 3 || list[0].Name != "alertmanager" || !slices.Equal(list[0].Channels, []string{"stable", "v1.*"}) ||
		list[1].Name != "ci" || list[1].RevokedAt.IsZero() || !list[2].RevokedAt.IsZero() {
		t.Errorf("ListTokens = %+v, %v", list, err)
	}
}

func errOf[T any](_ T, err error) error { return err }

func authErr(_ resolver.Principal, err error) error { return err }

// TestAuthenticateWritesOnlyForAValidToken: guessed tokens must not cost a
// database write each, nor a busy valid one a write per request. With the
// database refusing writes (default_transaction_read_only, as on a hot
// standby), a guess is still a plain 401 and a token used within the
// minute still authenticates.
func TestAuthenticateWritesOnlyForAValidToken(t *testing.T) {
	st, u := newStore(t)
	ctx := context.Background()
	plain, err := st.CreateToken(ctx, "ci", []string{"promote"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Authenticate(ctx, plain); err != nil {
		t.Fatal(err)
	}
	first := lastUsed(t, st)
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	query(t, u, `alter database `+pgx.Identifier{strings.TrimPrefix(parsed.Path, "/")}.Sanitize()+` set default_transaction_read_only = on`)
	ro, err := store.Open(ctx, u, nil) // new sessions pick the setting up
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for i := range 3 {
		if _, err := ro.Authenticate(ctx, tokendb.TokenPrefix+"guessed"+strings.Repeat("x", i)); !errors.Is(err, resolver.ErrUnauthorized) {
			t.Fatalf("guessed token on a read-only database: %v, want ErrUnauthorized (a read, no write)", err)
		}
	}
	if _, err := ro.Authenticate(ctx, plain); err != nil {
		t.Fatalf("valid token used a moment ago, on a read-only database: %v, want no write and success", err)
	}
	if again := lastUsed(t, ro); !again.Equal(first) {
		t.Errorf("last_used %s, then %s: want it kept within the minute", first, again)
	}
}

// lastUsed is the last use of the one token there is.
func lastUsed(t *testing.T, st *store.Store) time.Time {
	t.Helper()
	tokens, err := st.ListTokens(context.Background())
	if err != nil || len(tokens) != 1 {
		t.Fatalf("ListTokens = %+v, %v; want one token", tokens, err)
	}
	return tokens[0].LastUsed
}
