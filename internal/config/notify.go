package config

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Webhooks is `webhooks:`: where the secrets of the inbound webhooks that
// cannot carry a bearer token are kept (docs/webhooks.md). "" leaves that
// webhook off (its route answers 404).
type Webhooks struct {
	GitHubSecretFile    string // GitHub signs the body with it (X-Hub-Signature-256)
	DockerHubSecretFile string // Docker Hub's URL carries it in the path
	// MaxPending bounds each source's queue of pushed tags (over: 429);
	// default indexer.DefaultMaxPending.
	MaxPending int
}

// Notify is one `notify:` endpoint: outbound notifications.
type Notify struct {
	Name       string
	URL        string
	Kind       string // "webhook" (CloudEvents, the default) or "slack"
	SecretFile string // signs each body; "" leaves it unsigned
	Channels   []string
}

var (
	webhooksKeys = []string{"github_secret_file", "dockerhub_secret_file", "max_pending"}
	notifyKeys   = []string{"name", "url", "kind", "secret_file", "channels"}
)

func (p *parser) webhooks(n *yaml.Node, cfg *Config) {
	f := p.mapping(n, "", "webhooks", webhooksKeys)
	cfg.Webhooks.GitHubSecretFile, _ = p.str(f["github_secret_file"], "webhooks", "github_secret_file")
	cfg.Webhooks.DockerHubSecretFile, _ = p.str(f["dockerhub_secret_file"], "webhooks", "dockerhub_secret_file")
	if i, ok := p.integer(f["max_pending"], "webhooks", "max_pending"); ok {
		if i < 1 {
			p.add(deref(f["max_pending"]), "webhooks", "max_pending: want 1 or more, got %d", i)
		} else {
			cfg.Webhooks.MaxPending = i
		}
	}
}

// notify reads `notify:`; it runs after channels, whose names it checks.
func (p *parser) notify(n *yaml.Node, cfg *Config) {
	known := map[string]bool{}
	var names []string
	for _, c := range cfg.Channels {
		known[c.Name] = true
		names = append(names, c.Name)
	}
	firstLine := map[string]int{}
	for i, el := range p.list(n, "", "notify") {
		var nameNode *yaml.Node
		if m := deref(el); m != nil && m.Kind == yaml.MappingNode {
			nameNode = valueOf(m, "name")
		}
		item := itemName("notify", i, nameNode)
		if isNull(deref(el)) {
			p.add(el, item, "empty entry")
			continue
		}
		f := p.mapping(el, item, "", notifyKeys)
		before := len(p.problems)
		e := Notify{Kind: "webhook"}
		if v, ok := p.str(f["name"], item, "name"); !ok {
			p.add(deref(el), item, "name: missing")
		} else if !sourceName.MatchString(v) {
			p.add(deref(f["name"]), item, "name: %q is not a slug ([a-z0-9][a-z0-9._-]*)", v)
		} else if first, dup := firstLine[v]; dup {
			p.add(deref(f["name"]), item, "name: duplicate notify name (first on line %d)", first)
		} else {
			e.Name = v
			firstLine[v] = deref(f["name"]).Line
		}
		if v, ok := p.str(f["url"], item, "url"); !ok {
			p.add(deref(el), item, "url: missing")
		} else if p.absURL(f["url"], item, "url", v) {
			e.URL = v
		}
		if v, ok := p.str(f["kind"], item, "kind"); ok {
			if v != "webhook" && v != "slack" {
				p.add(deref(f["kind"]), item, "kind: %q: want webhook or slack", v)
			}
			e.Kind = v
		}
		e.SecretFile, _ = p.str(f["secret_file"], item, "secret_file")
		for _, c := range p.list(f["channels"], item, "channels") {
			v, ok := p.str(c, item, "channels")
			if !ok {
				continue
			}
			if !known[v] {
				p.add(deref(c), item, "channels: unknown channel %q (channels: %s)", v, strings.Join(names, ", "))
				continue
			}
			e.Channels = append(e.Channels, v)
		}
		if len(p.problems) == before {
			cfg.Notify = append(cfg.Notify, e)
		}
	}
}
