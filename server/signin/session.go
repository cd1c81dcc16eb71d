package signin

// The console's session: an AES-GCM sealed cookie naming the person,
// refreshed from the provider every 15 minutes, 8 hours at most.

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/tidemark-dev/tidemark/resolver"
)

type session struct {
	Name     string   `json:"n"`
	Scopes   []string `json:"s"`
	Channels []string `json:"c,omitempty"`
	Exp      int64    `json:"e"`           // trust the above until then
	Hard     int64    `json:"h"`           // the session ends then
	RT       string   `json:"r,omitempty"` // the provider's refresh token
}

// setSession writes v as the session cookie: what it trusts for Refresh
// (or until Hard without a refresh token), sealed.
func (s *SignIn) setSession(w http.ResponseWriter, v session, now time.Time) error {
	v.Exp = v.Hard
	if v.RT != "" {
		v.Exp = min(v.Hard, now.Add(s.cfg.Refresh).Unix())
	}
	val, err := s.seal(v)
	if err != nil {
		return err
	}
	http.SetCookie(w, s.cookie(SessionCookie, val, time.Unix(v.Hard, 0).Sub(now)))
	return nil
}

func (s *SignIn) key() ([]byte, error) {
	secret := ""
	if s.cfg.ClientSecret != nil {
		var err error
		if secret, err = s.cfg.ClientSecret(); err != nil {
			return nil, err
		}
	}
	// Every replica derives the same key from the shared client secret.
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("tidemark session v2 " + s.cfg.Issuer + " " + s.cfg.ClientID))
	return m.Sum(nil), nil
}

func (s *SignIn) aead() (cipher.AEAD, error) {
	k, err := s.key()
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts and authenticates v (the refresh token in it is a
// secret: the cookie must not show it).
func (s *SignIn) seal(v session) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	g, err := s.aead()
	if err != nil {
		return "", err
	}
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(g.Seal(nonce, nonce, b, []byte(SessionCookie))), nil
}

func (s *SignIn) open(val string) (session, bool) {
	var v session
	raw, err := base64.RawURLEncoding.DecodeString(val)
	g, gerr := s.aead()
	if err != nil || gerr != nil || len(raw) < g.NonceSize() {
		return v, false
	}
	b, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(SessionCookie))
	if err != nil || json.Unmarshal(b, &v) != nil {
		return v, false
	}
	return v, true
}

// Session is the person signed in on r's session cookie; ok false
// without a valid one. A session past its Refresh asks the provider again
// with its refresh token and writes the renewed cookie to w; a refused
// refresh ends it.
func (s *SignIn) Session(w http.ResponseWriter, r *http.Request) (resolver.Principal, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" || len(c.Value) > 8192 {
		return resolver.Principal{}, false
	}
	v, ok := s.open(c.Value)
	now := s.cfg.Now()
	if !ok || now.Unix() >= v.Hard {
		return resolver.Principal{}, false
	}
	if now.Unix() >= v.Exp {
		if v.RT == "" {
			return resolver.Principal{}, false
		}
		p, err := s.refresh(r.Context(), w, v, now)
		if err != nil {
			s.cfg.Log.Info("session refresh refused; signed out", "who", v.Name, "reason", err)
			http.SetCookie(w, s.cookie(SessionCookie, "", -time.Second))
			return resolver.Principal{}, false
		}
		return p, true
	}
	return resolver.Principal{Name: v.Name, Scopes: v.Scopes, Channels: v.Channels}, true
}

// refresh asks the provider for a new ID token with v's refresh token and
// renews the session from it (groups may have changed).
func (s *SignIn) refresh(ctx context.Context, w http.ResponseWriter, v session, now time.Time) (resolver.Principal, error) {
	verifier, oc, err := s.discover(ctx)
	if err != nil {
		return resolver.Principal{}, err
	}
	ctx = oidc.ClientContext(ctx, s.cfg.Client)
	tok, err := oc.TokenSource(ctx, &oauth2.Token{RefreshToken: v.RT, Expiry: now.Add(-time.Second)}).Token()
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
	if tok.RefreshToken != "" {
		v.RT = tok.RefreshToken // rotated
	}
	v.Name, v.Scopes, v.Channels = p.Name, p.Scopes, p.Channels
	return p, s.setSession(w, v, now)
}
