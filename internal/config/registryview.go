package config

import "gopkg.in/yaml.v3"

// RegistryView is `registry_view:` (CONTRACT section 14): how the
// read-only OCI registry view under /v2/ is served.
type RegistryView struct {
	// Auth is "none" (the default: anyone may pull, as anyone may read a
	// channel URL) or "token": Basic (any user, a token as the password,
	// as docker login sends) or Bearer, with a token of any scope.
	Auth string
	// Blobs is "stream" (the default: through Tidemark, with the source's
	// credentials) or "redirect" (a 307 to the upstream registry, for
	// public registries).
	Blobs string
	// Passthrough proxies names other than the source's own image under a
	// channel's repository (juju pulls juju-db beside jujud-operator) from
	// the source's upstream namespace, unfiltered.
	Passthrough bool
}

// Registry view defaults.
const (
	DefaultRegistryViewAuth  = "none"
	DefaultRegistryViewBlobs = "stream"
)

var registryViewKeys = []string{"auth", "blobs", "passthrough"}

func (p *parser) registryView(n *yaml.Node) RegistryView {
	rv := RegistryView{Auth: DefaultRegistryViewAuth, Blobs: DefaultRegistryViewBlobs}
	f := p.mapping(n, "", "registry_view", registryViewKeys)
	if s, ok := p.str(f["auth"], "registry_view", "auth"); ok {
		if s != "none" && s != "token" {
			p.add(deref(f["auth"]), "registry_view", "auth: want none or token, got %q", s)
		} else {
			rv.Auth = s
		}
	}
	if s, ok := p.str(f["blobs"], "registry_view", "blobs"); ok {
		if s != "stream" && s != "redirect" {
			p.add(deref(f["blobs"]), "registry_view", "blobs: want stream or redirect, got %q", s)
		} else {
			rv.Blobs = s
		}
	}
	rv.Passthrough = p.boolean(f["passthrough"], "registry_view", "passthrough")
	return rv
}
