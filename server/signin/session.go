package signin

// The console's session (CONTRACT section 16): a row in Postgres, named by
// a random id the cookie carries sealed (AES-GCM) with a key Tidemark made
// and keeps in Postgres. The row says who, with which scopes, until when;
// a logout revokes it, so the same cookie is refused on every replica at
// once. A session ends 8 hours after sign-in or 1 hour after its last
// request; what the provider said is trusted for Refresh, then asked
// again with the refresh token.

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Sessions keeps sessions and the cookie key (*store.Store).
type Sessions interface {
	SecretKey(ctx context.Context, name string) ([]byte, error)
	CreateSession(ctx context.Context, v resolver.Session) error
	UseSession(ctx context.Context, idHash []byte, idle time.Duration) (resolver.Session, error)
	RenewSession(ctx context.Context, v resolver.Session) error
	RevokeSession(ctx context.Context, idHash []byte) error
}

// sessionIdle ends a session an hour after its last request.
const sessionIdle = time.Hour

// cookieKeyName is the key's name in Postgres.
const cookieKeyName = "session-cookie"

// aead is the cookie cipher, its key read from Postgres once (made there
// by the first replica that needed it).
func (s *SignIn) aead(ctx context.Context) (cipher.AEAD, error) {
	s.mu.Lock()
	g := s.cipher
	s.mu.Unlock()
	if g != nil {
		return g, nil
	}
	if s.cfg.Sessions == nil {
		return nil, fmt.Errorf("%w: sign-in has no session store", resolver.ErrUnavailable)
	}
	k, err := s.cfg.Sessions.SecretKey(ctx, cookieKeyName)
	if err != nil {
		return nil, fmt.Errorf("%w: the session key: %v", resolver.ErrUnavailable, err)
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	if g, err = cipher.NewGCM(block); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cipher = g
	s.mu.Unlock()
	return g, nil
}

// newSession records a session for p and sets its cookie.
func (s *SignIn) newSession(ctx context.Context, w http.ResponseWriter, p resolver.Principal, rt string, now time.Time) error {
	id := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	g, err := s.aead(ctx)
	if err != nil {
		return err
	}
	hash := sha256.Sum256(id)
	v := resolver.Session{IDHash: hash[:], Principal: p, RefreshToken: rt, ExpiresAt: now.Add(sessionTTL)}
	v.TrustUntil = v.ExpiresAt
	if rt != "" {
		v.TrustUntil = now.Add(s.cfg.Refresh)
	}
	if err := s.cfg.Sessions.CreateSession(ctx, v); err != nil {
		return fmt.Errorf("%w: recording the session: %v", resolver.ErrUnavailable, err)
	}
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	val := base64.RawURLEncoding.EncodeToString(g.Seal(nonce, nonce, id, []byte(SessionCookie)))
	http.SetCookie(w, s.cookie(SessionCookie, val, sessionTTL))
	return nil
}

// sessionID is the hash of the session id r's cookie carries; ok false
// for no cookie, or one this service did not seal.
func (s *SignIn) sessionID(r *http.Request) ([]byte, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 512 {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	g, gerr := s.aead(r.Context())
	if err != nil || gerr != nil || len(raw) < g.NonceSize() {
		return nil, false
	}
	id, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(SessionCookie))
	if err != nil || len(id) != 32 {
		return nil, false
	}
	h := sha256.Sum256(id)
	return h[:], true
}

// Session is the person signed in on r's session cookie; ok false
// without a live one (none, signed out, idle, past its end). A session
// past its trust asks the provider again with its refresh token; a
// refused refresh ends it.
func (s *SignIn) Session(w http.ResponseWriter, r *http.Request) (resolver.Principal, bool) {
	hash, ok := s.sessionID(r)
	if !ok {
		return resolver.Principal{}, false
	}
	v, err := s.cfg.Sessions.UseSession(r.Context(), hash, sessionIdle)
	if err != nil {
		if !errors.Is(err, resolver.ErrUnauthorized) {
			s.cfg.Log.Warn("reading a session failed", "err", err)
		}
		return resolver.Principal{}, false
	}
	now := s.cfg.Now()
	if now.Before(v.TrustUntil) {
		return v.Principal, true
	}
	if v.RefreshToken == "" {
		return resolver.Principal{}, false
	}
	p, err := s.refresh(r.Context(), v, now)
	if err != nil {
		s.cfg.Log.Info("session refresh refused; signed out", "who", v.Principal.Name, "reason", err)
		_ = s.cfg.Sessions.RevokeSession(r.Context(), hash)
		http.SetCookie(w, s.cookie(SessionCookie, "", -time.Second))
		return resolver.Principal{}, false
	}
	return p, true
}

// Logout ends r's session on every replica and drops the cookie.
func (s *SignIn) Logout(w http.ResponseWriter, r *http.Request) error {
	if hash, ok := s.sessionID(r); ok {
		if err := s.cfg.Sessions.RevokeSession(r.Context(), hash); err != nil {
			return fmt.Errorf("%w: ending the session: %v", resolver.ErrUnavailable, err)
		}
	}
	http.SetCookie(w, s.cookie(SessionCookie, "", -time.Second))
	return nil
}

// refresh asks the provider for a new ID token with v's refresh token and
// renews the session from it (groups may have changed).
func (s *SignIn) refresh(ctx context.Context, v resolver.Session, now time.Time) (resolver.Principal, error) {
	verifier, oc, err := s.discover(ctx)
	if err != nil {
		return resolver.Principal{}, err
	}
	ctx = oidc.ClientContext(ctx, s.cfg.Client)
	tok, err := oc.TokenSource(ctx, &oauth2.Token{RefreshToken: v.RefreshToken, Expiry: now.Add(-time.Second)}).Token()
	if err != nil {
		return resolver.Principal{}, fmt.Errorf("refresh: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return resolver.Principal{}, errors.New("refresh: the provider sent no id_token")
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return resolver.Principal{}, fmt.Errorf("refresh: %w", err)
	}
	p, err := s.principal(idt)
	if err != nil {
		return p, err
	}
	if p.ID() != v.Principal.ID() {
		return p, errors.New("refresh: the provider answered for another person")
	}
	if tok.RefreshToken != "" {
		v.RefreshToken = tok.RefreshToken // rotated
	}
	v.Principal, v.TrustUntil = p, min64(v.ExpiresAt, now.Add(s.cfg.Refresh))
	return p, s.cfg.Sessions.RenewSession(ctx, v)
}

func min64(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
