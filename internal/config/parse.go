package config

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/resolver"
)

var topKeys = []string{
	"listen", "external_url", "database_url", "access_log", "read_timeout", "database_timeout",
	"defaults", "sources", "registries", "channels", "fleet", "trusted_proxies",
	"webhooks", "notify", "registry_view", "oidc", "limits", "tuf",
	// channelserver's channels.yaml keys, so that file loads as it is.
	"redirectBase", "github", "releases", "appDefaults",
}

// ignoredKeys are channelserver keys with no meaning here: Tidemark reads
// versions from registry tags, not GitHub releases, and serves no app defaults.
var ignoredKeys = []string{"github", "releases", "appDefaults"}

// defaults is the top-level `defaults:` block.
type defaults struct {
	source    string // "" when unset or invalid (already reported)
	stream    resolver.Stream
	hasStream bool
}

func (p *parser) parse(data []byte) *Config {
	cfg := &Config{File: p.file, Listen: DefaultListen, Registries: map[string]Registry{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		p.syntax(err, data)
		return cfg
	}
	// A second document would be silently ignored: say so, and still
	// check the first, so one run reports every problem.
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := 0
		if err == nil {
			line = extra.Line
		}
		p.problems = append(p.problems, Problem{Line: line, Msg: "more than one YAML document; put everything in one"})
	}
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		root = deref(doc.Content[0])
	}
	if !isNull(root) && root.Kind != yaml.MappingNode {
		p.add(root, "", "want a mapping of settings at the top, got %s", describe(root))
		return cfg
	}
	top := p.mapping(root, "", "", topKeys)

	if s, ok := p.str(top["listen"], "", "listen"); ok && p.listen(top["listen"], "listen", s) {
		cfg.Listen = s
	}
	if s, ok := p.str(top["external_url"], "", "external_url"); ok {
		if p.absURL(top["external_url"], "", "external_url", s) {
			cfg.ExternalURL = strings.TrimRight(s, "/")
		}
	}
	cfg.DatabaseURL, _ = p.str(top["database_url"], "", "database_url")
	cfg.AccessLog = p.accessLog(top["access_log"])
	cfg.ReadTimeout = p.positiveDuration(top["read_timeout"], "read_timeout", DefaultReadTimeout)
	cfg.DatabaseTimeout = p.positiveDuration(top["database_timeout"], "database_timeout", DefaultDatabaseTimeout)
	p.env(cfg)

	p.ignored(root)
	redirectBase, ok := p.str(top["redirectBase"], "", "redirectBase")
	if ok && !p.redirect(top["redirectBase"], "", "redirectBase", redirectBase) {
		redirectBase = ""
	}
	p.registries(top["registries"], cfg)
	cfg.Fleet = p.fleet(top["fleet"])
	cfg.TrustedProxies = p.trustedProxies(top["trusted_proxies"])
	cfg.Limits = p.limits(top["limits"])
	cfg.Sources = p.sources(top["sources"])
	cfg.sourcesYAML = canonical(withoutLifecycle(top["sources"])) + "\n---\n" + canonical(top["registries"])
	d := p.defaults(top["defaults"], cfg)
	cfg.Channels = p.channels(top["channels"], cfg, d, redirectBase)
	cfg.Webhooks.MaxPending = indexer.DefaultMaxPending
	p.webhooks(top["webhooks"], cfg)
	p.notify(top["notify"], cfg)
	cfg.RegistryView = p.registryView(top["registry_view"])
	cfg.OIDC = p.oidc(top["oidc"], cfg)
	cfg.TUF = p.tuf(top["tuf"])
	// A file with nothing in it (empty, or the wrong file) would serve
	// nothing while /readyz says ready: refuse it.
	if len(cfg.Sources) == 0 && len(cfg.Channels) == 0 && len(p.problems) == 0 {
		p.problems = append(p.problems, Problem{Msg: "no sources and no channels: nothing to serve (is this the right file?)"})
	}
	cfg.Warnings = p.warnings
	return cfg
}

// positiveDuration reads a top-level duration that must be above zero;
// def when it is not set (or wrong, which is reported).
func (p *parser) positiveDuration(n *yaml.Node, key string, def time.Duration) time.Duration {
	d, has := p.duration(n, "", key)
	switch {
	case !has:
		return def
	case d <= 0:
		p.add(deref(n), "", "%s: want a duration above zero like %v, got %v", key, def, d)
		return def
	}
	return d
}

// env applies the environment overrides of the contract.
func (p *parser) env(cfg *Config) {
	if v := p.getenv("TIDEMARK_LISTEN"); v != "" && p.listen(nil, "TIDEMARK_LISTEN", v) {
		cfg.Listen = v
	}
	if v := p.getenv("DATABASE_URL"); v != "" {
		cfg.DatabaseURL = v
	}
}

func (p *parser) listen(n *yaml.Node, key, s string) bool {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		p.add(deref(n), "", "%s: want host:port like \":8080\", got %q", key, s)
		return false
	}
	if v, err := strconv.ParseUint(port, 10, 64); err != nil || v > 65535 {
		p.add(deref(n), "", "%s: port %q of %q is not a port number (0-65535)", key, port, s)
		return false
	}
	return true
}

func (p *parser) absURL(n *yaml.Node, item, key, s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(deref(n), item, "%s: want an absolute http(s) URL, got %q", key, s)
		return false
	}
	return true
}

// redirect accepts what may prefix a Location header: an absolute http(s)
// URL or a path on this server.
func (p *parser) redirect(n *yaml.Node, item, key, s string) bool {
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		if _, err := url.Parse(s); err == nil {
			return true
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(deref(n), item, "%s: want an absolute http(s) URL or a path starting with /, got %q", key, s)
		return false
	}
	return true
}

// ignored warns once about the channelserver keys that mean nothing here.
func (p *parser) ignored(root *yaml.Node) {
	if root == nil || root.Kind != yaml.MappingNode {
		return
	}
	var keys []string
	line := 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if contains(ignoredKeys, k.Value) && !contains(keys, k.Value) {
			if line == 0 {
				line = k.Line
			}
			keys = append(keys, k.Value)
		}
	}
	if len(keys) > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf(
			"%s:%d: ignoring channelserver keys %s: Tidemark reads versions from registry tags",
			p.file, line, strings.Join(keys, ", ")))
	}
}

func (p *parser) defaults(n *yaml.Node, cfg *Config) defaults {
	var d defaults
	f := p.mapping(n, "defaults", "", []string{"source", "stream"})
	if s, ok := p.str(f["source"], "defaults", "source"); ok {
		if _, known := cfg.Source(s); known || p.broken[s] != nil {
			d.source = s
		} else {
			p.add(deref(f["source"]), "defaults", "source: unknown source %q%s", s, p.knownSources())
		}
	}
	d.stream, d.hasStream = p.stream(f["stream"], "defaults", "stream")
	return d
}

func (p *parser) knownSources() string {
	if len(p.names) == 0 {
		return " (no sources are configured)"
	}
	return " (known: " + strings.Join(p.names, ", ") + ")"
}

func (p *parser) registries(n *yaml.Node, cfg *Config) {
	n = deref(n)
	if !isNull(n) && n.Kind != yaml.MappingNode {
		p.add(n, "", "registries: want a mapping of registry host to settings, got %s", describe(n))
	} else if n != nil && n.Kind == yaml.MappingNode {
		hosts := p.mapping(n, "", "registries", keysOf(n))
		for i := 0; i+1 < len(n.Content); i += 2 {
			host := deref(n.Content[i]).Value
			v, ok := hosts[host]
			if !ok || v != n.Content[i+1] {
				continue // a bad or duplicate key, reported
			}
			item := fmt.Sprintf("registry %q", host)
			if _, err := name.NewRegistry(host); err != nil || !registryHost.MatchString(host) {
				p.add(n.Content[i], item, "not a registry host (like docker.io or ghcr.io)")
				continue
			}
			f := p.mapping(v, item, "", []string{"rate_limit"})
			rate, ok := p.number(f["rate_limit"], item, "rate_limit")
			if ok && rate < 0 {
				p.add(deref(f["rate_limit"]), item, "rate_limit: want requests per second >= 0 (0 = unlimited), got %v", rate)
				continue
			}
			cfg.Registries[host] = Registry{RateLimit: rate}
		}
	}
	for _, alias := range []string{"docker.io", name.DefaultRegistry, "registry-1.docker.io"} {
		if _, set := cfg.Registries[alias]; set {
			return
		}
	}
	cfg.Registries["docker.io"] = Registry{RateLimit: DockerHubRateLimit}
}

var registryHost = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]+)?$`)

// keysOf lists a mapping's scalar keys, for mappings whose keys are data.
func keysOf(n *yaml.Node) []string {
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode {
			keys = append(keys, k.Value)
		}
	}
	return keys
}

// canonical re-encodes n the same way however it is spelled (comments,
// key order, flow or block style, anchors), for Config.SameSources.
func canonical(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return "undecodable: " + err.Error() // a problem reported elsewhere
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

// withoutLifecycle is a copy of the sources list without each source's
// lifecycle: a SIGHUP applies it (it is data the snapshot reads, not the
// indexer's), so it is no change that needs a restart.
func withoutLifecycle(n *yaml.Node) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return n
	}
	out := *n
	out.Content = make([]*yaml.Node, len(n.Content))
	for i, el := range n.Content {
		m := deref(el)
		if m == nil || m.Kind != yaml.MappingNode {
			out.Content[i] = el
			continue
		}
		c := *m
		c.Content = nil
		for k := 0; k+1 < len(m.Content); k += 2 {
			if deref(m.Content[k]).Value != "lifecycle" {
				c.Content = append(c.Content, m.Content[k], m.Content[k+1])
			}
		}
		out.Content[i] = &c
	}
	return &out
}

// accessLog is the access_log setting: which requests get a log line.
func (p *parser) accessLog(n *yaml.Node) string {
	s, ok := p.str(n, "", "access_log")
	if !ok {
		return DefaultAccessLog
	}
	switch s {
	case "all", "sample", "off":
		return s
	}
	p.add(deref(n), "", "access_log: want all, sample or off, got %q", s)
	return DefaultAccessLog
}

// trustedProxies reads `trusted_proxies:`, addresses or CIDR prefixes of
// the proxies whose X-Forwarded-For is believed (CONTRACT section 12).
func (p *parser) trustedProxies(n *yaml.Node) []netip.Prefix { return p.prefixes(n, "trusted_proxies") }

// prefixes reads a list of addresses or CIDR prefixes at key.
func (p *parser) prefixes(n *yaml.Node, key string) []netip.Prefix {
	var out []netip.Prefix
	for i, el := range p.list(n, "", key) {
		k := fmt.Sprintf("%s[%d]", key, i)
		s, ok := p.str(el, "", k)
		if !ok {
			continue
		}
		if pfx, err := netip.ParsePrefix(s); err == nil {
			out = append(out, pfx.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
		} else {
			p.add(deref(el), "", "%s: want an address or CIDR prefix like 10.0.0.0/8, got %q", k, s)
		}
	}
	return out
}
