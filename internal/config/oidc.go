package config

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/resolver"
)

// OIDC is `oidc:` (CONTRACT section 15): sign-in with an OpenID provider.
type OIDC struct {
	Issuer           string
	ClientID         string
	ClientSecretFile string
	GroupsClaim      string
	Roles            []OIDCRole
}

// OIDCRole maps a group to a scope on some channels (none: all).
type OIDCRole struct {
	Group    string
	Scope    string
	Channels []string
}

// ClientSecret reads the secret file at use time (a rotated secret needs
// no restart).
func (o *OIDC) ClientSecret() (string, error) {
	b, err := os.ReadFile(o.ClientSecretFile)
	if err != nil {
		return "", fmt.Errorf("oidc: client_secret_file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// MinClientSecret is the shortest client secret start-up accepts.
const MinClientSecret = 16

// CheckSecret reads the client secret once, as start-up and config check
// do: a missing, empty or short (under 16 bytes) secret is refused, with
// the file named.
func (o *OIDC) CheckSecret() error {
	s, err := o.ClientSecret()
	if err != nil {
		return err
	}
	if len(s) < MinClientSecret {
		return fmt.Errorf("oidc: client_secret_file %s holds %d bytes; a client secret has at least %d (the one your OpenID provider issued for client %q)",
			o.ClientSecretFile, len(s), MinClientSecret, o.ClientID)
	}
	return nil
}

var (
	oidcKeys = []string{"issuer", "client_id", "client_secret_file", "groups_claim", "roles"}
	roleKeys = []string{"group", "scope", "channels"}
	// scopes a role may give (server.Scope*).
	roleScopes = []string{"read", "promote", "scan", "admin"}
)

func (p *parser) oidc(n *yaml.Node, cfg *Config) *OIDC {
	if isNull(deref(n)) {
		return nil
	}
	f := p.mapping(n, "", "oidc", oidcKeys)
	o := &OIDC{GroupsClaim: "groups"}
	if s, ok := p.str(f["issuer"], "oidc", "issuer"); !ok {
		p.add(deref(n), "oidc", "issuer: missing (the provider's URL, as in its discovery document)")
	} else if p.absURL(f["issuer"], "oidc", "issuer", s) {
		o.Issuer = strings.TrimRight(s, "/")
		if strings.HasSuffix(s, "/") {
			o.Issuer = s // an issuer is compared byte for byte: keep it as the provider writes it
		}
	}
	if s, ok := p.str(f["client_id"], "oidc", "client_id"); ok && s != "" {
		o.ClientID = s
	} else {
		p.add(deref(n), "oidc", "client_id: missing")
	}
	if s, ok := p.str(f["client_secret_file"], "oidc", "client_secret_file"); ok && s != "" {
		o.ClientSecretFile = s
	} else {
		p.add(deref(n), "oidc", "client_secret_file: missing (a file holding the client secret)")
	}
	if s, ok := p.str(f["groups_claim"], "oidc", "groups_claim"); ok && s != "" {
		o.GroupsClaim = s
	}
	for i, el := range p.list(f["roles"], "oidc", "roles") {
		rf := p.mapping(el, "oidc", "roles", roleKeys)
		var r OIDCRole
		r.Group, _ = p.str(rf["group"], "oidc", "roles: group")
		r.Scope, _ = p.str(rf["scope"], "oidc", "roles: scope")
		if r.Group == "" {
			p.add(deref(el), "oidc", "roles[%d]: group: missing", i)
		}
		if !containsStr(roleScopes, r.Scope) {
			p.add(deref(el), "oidc", "roles[%d]: scope: want read, promote, scan or admin, got %q", i, r.Scope)
		}
		for _, c := range p.list(rf["channels"], "oidc", "roles: channels") {
			g, _ := p.str(c, "oidc", "roles: channels")
			if !resolver.ValidChannelGlob(g) {
				p.add(deref(c), "oidc", "roles[%d]: channels: %q is not a channel name or glob", i, g)
				continue
			}
			r.Channels = append(r.Channels, g)
		}
		o.Roles = append(o.Roles, r)
	}
	if cfg.ExternalURL == "" {
		p.add(deref(n), "oidc", "needs external_url: the provider returns people to <external_url>/ui/callback")
	}
	return o
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
