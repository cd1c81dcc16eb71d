package resolver

import (
	"path"
	"time"
)

// Principal is who a request acts as: an API token today, a person signed
// in with OpenID Connect later. The audit actor is Name.
type Principal struct {
	Name string
	// Identity is who the principal is, for counting approvals: a signed-in
	// person's issuer and subject ("<iss> <sub>"), a token's "token:<name>".
	// "" is read as Name.
	Identity string
	// Person: signed in with OpenID Connect (a session or an ID token),
	// not a Tidemark token.
	Person bool
	Scopes []string
	// Channels limits channel writes (pin, unpin, rollout controls, ...) to
	// the channels these names or globs ("v1.*") match; empty: every
	// channel. A limited principal may make no source-wide write.
	Channels []string
}

// ScopeAdmin is the scope that may override a freeze or a window.
const ScopeAdmin = "admin"

// Admin reports whether p has scope admin.
func (p Principal) Admin() bool {
	for _, s := range p.Scopes {
		if s == ScopeAdmin {
			return true
		}
	}
	return false
}

// ID is p's identity: Identity, else Name.
func (p Principal) ID() string {
	if p.Identity != "" {
		return p.Identity
	}
	return p.Name
}

// Limited reports whether p may write only some channels.
func (p Principal) Limited() bool { return len(p.Channels) > 0 }

// MayWriteChannel reports whether p's channel limit lets it write channel.
func (p Principal) MayWriteChannel(channel string) bool {
	if !p.Limited() {
		return true
	}
	for _, g := range p.Channels {
		if ok, err := path.Match(g, channel); err == nil && ok {
			return true
		}
	}
	return false
}

// ValidChannelGlob reports whether g is a channel name or glob that
// MayWriteChannel can use.
func ValidChannelGlob(g string) bool {
	if g == "" {
		return false
	}
	_, err := path.Match(g, "")
	return err == nil
}

// Session is a person's console session as the database keeps it: who,
// with what, until when.
type Session struct {
	IDHash       []byte // sha256 of the random id the cookie carries
	Principal    Principal
	RefreshToken string    // the provider's, to renew TrustUntil
	TrustUntil   time.Time // the principal's groups are trusted until then
	CreatedAt    time.Time
	LastSeen     time.Time
	ExpiresAt    time.Time // 8 hours after sign-in
}
