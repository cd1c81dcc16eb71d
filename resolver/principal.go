package resolver

import "path"

// Principal is who a request acts as: an API token today, a person signed
// in with OpenID Connect later. The audit actor is Name.
type Principal struct {
	Name   string
	Scopes []string
	// Channels limits channel writes (pin, unpin, rollout controls, ...) to
	// the channels these names or globs ("v1.*") match; empty: every
	// channel. A limited principal may make no source-wide write.
	Channels []string
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
