// Package signin signs people in with OpenID Connect (CONTRACT section
// 15): the console's authorization-code flow with PKCE, state and nonce,
// a signed session cookie, and the provider's ID tokens accepted as
// bearer tokens by the API. A person's groups map to scopes and channel
// globs through the configured roles; the audit actor is their email,
// else their subject.
//
// The provider is discovered on first use, not at start-up, and a
// provider that is down costs only sign-ins: channel answers never wait
// for it.
package signin

import (
	"context"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"golang.org/x/oauth2"

	"github.com/tidemark-dev/tidemark/internal/logtext"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Role maps a group to a scope, on some channels (none: every channel).
type Role struct {
	Group    string
	Scope    string
	Channels []string
}

// Config is `oidc:`.
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret func() (string, error)
	GroupsClaim  string // default "groups"
	Roles        []Role
	// ExternalURL is where the provider sends people back
	// (<ExternalURL>/ui/callback); https makes the cookie Secure.
	ExternalURL string
	Client      *http.Client // nil: one with a 10 s timeout
	// Refresh is how long a session trusts what the provider said before
	// asking it again with the refresh token (groups may have changed, the
	// person may have left); 0: 15 minutes. A session ends after 8 hours
	// whatever happens, and at once when a refresh is refused.
	Refresh time.Duration
	Log     *slog.Logger
	Now     func() time.Time
	// Sessions keeps console sessions and the cookie key (Postgres).
	Sessions Sessions
}

// SessionCookie is the console session's cookie.
const SessionCookie = "tidemark_session"

// sessionTTL is how long a console session lasts: a working day; the
// person signs in again after it.
const sessionTTL = 8 * time.Hour

// stateTTL bounds a sign-in in progress, and maxPending how many may be
// (past it, the oldest is forgotten).
const (
	stateTTL   = 10 * time.Minute
	maxPending = 10000
)

// SignIn is the sign-in service.
type SignIn struct {
	cfg Config

	mu       sync.Mutex
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	oauth    *oauth2.Config
	lastTry  time.Time
	pending  map[string]pendingLogin // by state; used once
	cipher   cipher.AEAD             // the session cookie's, keyed from Postgres
}

type pendingLogin struct {
	nonce, verifier string
	at              time.Time
	back            string
}

// New makes the service; nothing is fetched until a sign-in or a bearer
// token needs the provider.
func New(cfg Config) *SignIn {
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 15 * time.Minute
	}
	cfg.ExternalURL = strings.TrimRight(cfg.ExternalURL, "/")
	return &SignIn{cfg: cfg, pending: map[string]pendingLogin{}}
}

// discover finds the provider (its endpoints and keys) once; a failure
// is retried at most every 10 s.
func (s *SignIn) discover(ctx context.Context) (*oidc.IDTokenVerifier, *oauth2.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.verifier != nil {
		return s.verifier, s.oauth, nil
	}
	if !s.lastTry.IsZero() && s.cfg.Now().Sub(s.lastTry) < refetchEvery {
		return nil, nil, fmt.Errorf("%w: the OpenID provider %s did not answer a moment ago", resolver.ErrUnavailable, s.cfg.Issuer)
	}
	s.lastTry = s.cfg.Now()
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, s.cfg.Client), 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, s.cfg.Issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: the OpenID provider %s: %v", resolver.ErrUnavailable, s.cfg.Issuer, err)
	}
	var claims struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&claims); err != nil || claims.JWKS == "" {
		return nil, nil, fmt.Errorf("%w: the OpenID provider %s names no jwks_uri", resolver.ErrUnavailable, s.cfg.Issuer)
	}
	algs := []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.ES256, jose.ES384, jose.ES512, jose.PS256, jose.PS384, jose.PS512, jose.EdDSA}
	ks := &keySet{url: claims.JWKS, client: s.cfg.Client, algs: algs, now: s.cfg.Now}
	algNames := make([]string, len(algs))
	for i, a := range algs {
		algNames[i] = string(a)
	}
	s.verifier = oidc.NewVerifier(s.cfg.Issuer, ks, &oidc.Config{ClientID: s.cfg.ClientID, SupportedSigningAlgs: algNames, Now: s.cfg.Now})
	secret := ""
	if s.cfg.ClientSecret != nil {
		if secret, err = s.cfg.ClientSecret(); err != nil {
			s.verifier = nil
			return nil, nil, fmt.Errorf("%w: oidc client secret: %v", resolver.ErrUnavailable, err)
		}
	}
	scopes := []string{oidc.ScopeOpenID, "email", "profile"}
	var supported struct {
		Scopes []string `json:"scopes_supported"`
	}
	if p.Claims(&supported) == nil && slices.Contains(supported.Scopes, oidc.ScopeOfflineAccess) {
		scopes = append(scopes, oidc.ScopeOfflineAccess) // a refresh token, to keep a session fresh
	}
	s.oauth = &oauth2.Config{ClientID: s.cfg.ClientID, ClientSecret: secret, Endpoint: p.Endpoint(),
		RedirectURL: s.cfg.ExternalURL + "/ui/callback", Scopes: scopes}
	s.provider = p
	return s.verifier, s.oauth, nil
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Login starts a sign-in: it remembers a state, a nonce and a PKCE
// verifier, and sends the browser to the provider.
func (s *SignIn) Login(w http.ResponseWriter, r *http.Request) error {
	_, oc, err := s.discover(r.Context())
	if err != nil {
		return err
	}
	state, nonce, verifier := random(24), random(24), oauth2.GenerateVerifier()
	back := r.URL.Query().Get("back")
	if !strings.HasPrefix(back, "/ui/") || strings.HasPrefix(back, "//") {
		back = "/ui/"
	}
	s.mu.Lock()
	now := s.cfg.Now()
	for k, p := range s.pending {
		if now.Sub(p.at) > stateTTL {
			delete(s.pending, k)
		}
	}
	if len(s.pending) >= maxPending {
		// A flood of /ui/login must not lock people out for ten minutes:
		// the oldest sign-in in progress makes room (it can start again).
		oldest := ""
		for k, p := range s.pending {
			if oldest == "" || p.at.Before(s.pending[oldest].at) {
				oldest = k
			}
		}
		delete(s.pending, oldest)
	}
	s.pending[state] = pendingLogin{nonce: nonce, verifier: verifier, at: now, back: back}
	s.mu.Unlock()
	http.SetCookie(w, s.cookie("tidemark_state", state, stateTTL))
	http.Redirect(w, r, oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
	return nil
}

func (s *SignIn) cookie(name, value string, ttl time.Duration) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: int(ttl.Seconds()), HttpOnly: true,
		Secure: strings.HasPrefix(s.cfg.ExternalURL, "https://"), SameSite: http.SameSiteLaxMode}
}

// ErrSignIn is a callback that signs nobody in (an unknown or used state,
// a refused code, a token that does not verify).
var ErrSignIn = errors.New("sign-in refused")

// Callback finishes a sign-in: the state must be one Login made and not
// yet used, and the browser's; the code is exchanged with the PKCE
// verifier; the ID token must verify and carry the nonce. It sets the
// session cookie and answers where to send the browser.
func (s *SignIn) Callback(w http.ResponseWriter, r *http.Request) (string, error) {
	q := r.URL.Query()
	state := q.Get("state")
	s.mu.Lock()
	p, ok := s.pending[state]
	delete(s.pending, state)
	s.mu.Unlock()
	c, cerr := r.Cookie("tidemark_state")
	switch {
	case q.Get("error") != "":
		return "", fmt.Errorf("%w: the provider said %s", ErrSignIn, logtext.Cut(q.Get("error"), 64))
	case !ok || s.cfg.Now().Sub(p.at) > stateTTL:
		return "", fmt.Errorf("%w: unknown or used state", ErrSignIn)
	case cerr != nil || !hmac.Equal([]byte(c.Value), []byte(state)):
		return "", fmt.Errorf("%w: the state is not this browser's", ErrSignIn)
	}
	verifier, oc, err := s.discover(r.Context())
	if err != nil {
		return "", err
	}
	ctx := oidc.ClientContext(r.Context(), s.cfg.Client)
	tok, err := oc.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(p.verifier))
	if err != nil {
		return "", fmt.Errorf("%w: the code exchange failed: %v", ErrSignIn, err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", fmt.Errorf("%w: the provider sent no id_token", ErrSignIn)
	}
	idt, err := verifier.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrSignIn, err)
	}
	if !hmac.Equal([]byte(idt.Nonce), []byte(p.nonce)) {
		return "", fmt.Errorf("%w: the ID token's nonce is not this sign-in's", ErrSignIn)
	}
	who, err := s.principal(idt)
	if err != nil {
		return "", err
	}
	if err := s.newSession(r.Context(), w, who, tok.RefreshToken, s.cfg.Now()); err != nil {
		return "", err
	}
	http.SetCookie(w, s.cookie("tidemark_state", "", -time.Second))
	s.cfg.Log.Info("signed in", "who", who.Name, "scopes", who.Scopes)
	return p.back, nil
}

// LooksLikeJWT reports whether a bearer credential is a JWT (three
// base64url parts), not a Tidemark token.
func LooksLikeJWT(tok string) bool {
	return strings.Count(tok, ".") == 2 && !strings.HasPrefix(tok, "tdm_")
}

// Bearer verifies one of the provider's ID tokens sent as a bearer token
// (issuer, audience = client_id, expiry, signature); errors wrap
// resolver.ErrUnauthorized and name the reason, never the token.
func (s *SignIn) Bearer(ctx context.Context, raw string) (resolver.Principal, error) {
	verifier, _, err := s.discover(ctx)
	if err != nil {
		return resolver.Principal{}, err
	}
	idt, err := verifier.Verify(oidc.ClientContext(ctx, s.cfg.Client), raw)
	if err != nil {
		return resolver.Principal{}, fmt.Errorf("%w: the ID token does not verify: %s", resolver.ErrUnauthorized, logtext.Cut(err.Error(), 200))
	}
	return s.principal(idt)
}

// principal maps a verified ID token to who acts: the person is the
// issuer and subject (their Identity, which approvals count); the audit
// actor is their email only when the provider says it is verified, else
// their subject; scopes and channel globs from the roles of its groups.
func (s *SignIn) principal(idt *oidc.IDToken) (resolver.Principal, error) {
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return resolver.Principal{}, fmt.Errorf("%w: ID token claims: %v", resolver.ErrUnauthorized, err)
	}
	name := idt.Subject
	if email, _ := claims["email"].(string); email != "" && verified(claims["email_verified"]) {
		name = email
	}
	var groups []string
	switch g := claims[s.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if str, ok := v.(string); ok {
				groups = append(groups, str)
			}
		}
	case string:
		groups = []string{g}
	}
	p := resolver.Principal{Name: name, Identity: idt.Issuer + " " + idt.Subject, Person: true}
	// Channel limits are about channel writes: only roles that give one
	// (promote, admin) limit or lift them. A read or scan role without
	// channels must not lift a promote role's limit.
	unlimited, writer := false, false
	for _, r := range s.cfg.Roles {
		if !slices.Contains(groups, r.Group) {
			continue
		}
		if !slices.Contains(p.Scopes, r.Scope) {
			p.Scopes = append(p.Scopes, r.Scope)
		}
		if r.Scope != "promote" && r.Scope != "admin" {
			continue
		}
		writer = true
		if len(r.Channels) == 0 {
			unlimited = true
		}
		for _, c := range r.Channels {
			if !slices.Contains(p.Channels, c) {
				p.Channels = append(p.Channels, c)
			}
		}
	}
	if unlimited || !writer {
		p.Channels = nil
	}
	return p, nil
}

// verified reads email_verified: true, or "true" as some providers send.
func verified(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case string:
		return b == "true"
	}
	return false
}

// ValidRoleChannels reports whether every glob of r is usable.
func ValidRoleChannels(r Role) error {
	for _, g := range r.Channels {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			return fmt.Errorf("channel glob %q is not valid", g)
		}
	}
	return nil
}
