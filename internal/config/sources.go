package config

import (
	"fmt"
	"regexp"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/resolver"
)

var sourceKeys = []string{
	"name", "image", "scheme", "interval", "exclude", "build", "insecure", "concurrency",
	"timeout", "recheck", "username", "password_file", "password_env", "labels", "gates",
	"cluster_api", "lifecycle",
}

var (
	sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// itemName names the i-th element of a list for messages: by its name when
// it has a scalar one, else by position.
func itemName(kind string, i int, nameNode *yaml.Node) string {
	if n := deref(nameNode); !isNull(n) && n.Kind == yaml.ScalarNode && n.Value != "" {
		return fmt.Sprintf("%s %q", kind, n.Value)
	}
	return fmt.Sprintf("%s #%d", kind, i+1)
}

func (p *parser) sources(n *yaml.Node) []Source {
	var out []Source
	firstLine := map[string]int{}
	for i, el := range p.list(n, "", "sources") {
		var nameNode *yaml.Node
		if m := deref(el); m != nil && m.Kind == yaml.MappingNode {
			nameNode = valueOf(m, "name")
		}
		item := itemName("source", i, nameNode)
		if isNull(deref(el)) {
			p.add(el, item, "empty entry")
			continue
		}
		f := p.mapping(el, item, "", sourceKeys)
		s, ok := p.source(f, item, deref(el))
		if first, dup := firstLine[s.Name]; dup && s.Name != "" {
			p.add(deref(f["name"]), item, "name: duplicate source name (first on line %d)", first)
			continue
		}
		if s.Name != "" {
			firstLine[s.Name] = deref(f["name"]).Line
			p.names = append(p.names, s.Name)
		}
		switch {
		case ok:
			out = append(out, s)
		case s.Name != "":
			if p.broken == nil {
				p.broken = map[string]*Source{}
			}
			p.broken[s.Name] = &s
		}
	}
	return out
}

// valueOf finds key's value in a mapping without reporting anything.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if deref(m.Content[i]).Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// source builds one source. ok is false when it is too broken to refer to;
// its name is still returned so that channels naming it are not reported
// as naming an unknown source on top of the real problem.
func (p *parser) source(f map[string]*yaml.Node, item string, at *yaml.Node) (s Source, ok bool) {
	before := len(p.problems)
	s.Interval, s.Concurrency, s.Timeout, s.Recheck = DefaultInterval, DefaultConcurrency, DefaultTimeout, DefaultRecheck

	if v, has := p.str(f["name"], item, "name"); !has {
		p.add(at, item, "name: missing")
	} else if !sourceName.MatchString(v) {
		p.add(deref(f["name"]), item, "name: %q is not a slug ([a-z0-9][a-z0-9._-]*)", v)
	} else {
		s.Name = v
	}
	s.Insecure = p.boolean(f["insecure"], item, "insecure")
	s.ClusterAPI = p.boolean(f["cluster_api"], item, "cluster_api")
	if v, has := p.str(f["image"], item, "image"); !has {
		p.add(at, item, "image: missing")
	} else {
		var opts []name.Option
		if s.Insecure {
			opts = append(opts, name.Insecure)
		}
		if _, err := name.NewRepository(v, opts...); err != nil {
			p.add(deref(f["image"]), item, "image: %v", err)
		} else {
			s.Image = v
		}
	}
	if v, has := p.str(f["scheme"], item, "scheme"); !has {
		p.add(at, item, "scheme: missing (want juju or semver)")
	} else {
		s.Scheme = resolver.Scheme(v)
	}
	s.Build, _ = p.str(f["build"], item, "build")
	p.parser(&s, f, item)

	if d, has := p.duration(f["interval"], item, "interval"); has {
		if d < MinInterval {
			p.add(deref(f["interval"]), item, "interval: %v is shorter than the minimum %v", d, MinInterval)
		} else {
			s.Interval = d
		}
	}
	if d, has := p.duration(f["timeout"], item, "timeout"); has {
		if d <= 0 {
			p.add(deref(f["timeout"]), item, "timeout: want a positive duration, got %v", d)
		} else {
			s.Timeout = d
		}
	}
	if d, has := p.duration(f["recheck"], item, "recheck"); has {
		switch {
		case d < 0:
			p.add(deref(f["recheck"]), item, "recheck: want a duration like 24h, or 0 for never, got %v", d)
		case d == 0:
			s.Recheck = -1 // the indexer's never
		default:
			s.Recheck = d
		}
	}
	if c, has := p.integer(f["concurrency"], item, "concurrency"); has {
		if c < 1 {
			p.add(deref(f["concurrency"]), item, "concurrency: want at least 1, got %d", c)
		} else {
			s.Concurrency = c
		}
	}
	s.Exclude, _ = p.regexp(f["exclude"], item, "exclude")
	p.auth(&s, f, item)
	s.Labels = p.labels(f["labels"], item)
	p.gates(&s, f["gates"], item)
	s.Lifecycle = p.lifecycle(f["lifecycle"], item)
	return s, len(p.problems) == before
}

// parser builds the version parser, checking the build pattern here first so
// its problems read like the others (the resolver's messages are generic).
func (p *parser) parser(s *Source, f map[string]*yaml.Node, item string) {
	if s.Scheme == "" {
		return
	}
	if s.Scheme != resolver.SchemeJuju && s.Scheme != resolver.SchemeSemver {
		p.add(deref(f["scheme"]), item, "scheme: unknown scheme %q (want juju or semver)", s.Scheme)
		return
	}
	if s.Build != "" && s.Scheme == resolver.SchemeSemver {
		re, err := regexp.Compile(s.Build)
		if err != nil {
			p.add(deref(f["build"]), item, "build: %s", regexpCause(err))
			return
		}
		if re.NumSubexp() < 1 {
			p.add(deref(f["build"]), item, "build: `%s` has no capture group for the build number, like `k3s(\\d+)`", s.Build)
			return
		}
	}
	parser, err := resolver.NewParser(s.Scheme, s.Build)
	if err != nil {
		at := f["build"]
		if at == nil {
			at = f["scheme"]
		}
		p.add(deref(at), item, "build: %s", trimInvalid(err))
		return
	}
	s.Parser = parser
}

func (p *parser) auth(s *Source, f map[string]*yaml.Node, item string) {
	s.Username, _ = p.str(f["username"], item, "username")
	s.PasswordFile, _ = p.str(f["password_file"], item, "password_file")
	s.PasswordEnv, _ = p.str(f["password_env"], item, "password_env")
	if s.PasswordEnv != "" && !envName.MatchString(s.PasswordEnv) {
		p.add(deref(f["password_env"]), item, "password_env: %q is not an environment variable name", s.PasswordEnv)
	}
	switch {
	case s.PasswordFile != "" && s.PasswordEnv != "":
		p.add(deref(f["password_env"]), item, "password_env: give password_file or password_env, not both")
	case s.Username == "" && (s.PasswordFile != "" || s.PasswordEnv != ""):
		at := f["password_file"]
		if at == nil {
			at = f["password_env"]
		}
		p.add(deref(at), item, "username: missing (a password needs a username)")
	case s.Username != "" && s.PasswordFile == "" && s.PasswordEnv == "":
		p.add(deref(f["username"]), item, "username: needs password_file or password_env")
	}
	s.Password = password(s.Name, s.PasswordFile, s.PasswordEnv, p.getenv)
}

// labels reads a pre-release label -> stream map and lays it over the
// default map, so `labels: {alpha: devel}` keeps rc and beta as they were.
func (p *parser) labels(n *yaml.Node, item string) resolver.Labels {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.add(n, item, "labels: want a mapping of pre-release label to stream, got %s", describe(n))
		return nil
	}
	f := p.mapping(n, item, "labels", keysOf(n))
	out := resolver.Labels{}
	for k, v := range resolver.DefaultLabels {
		out[k] = v
	}
	for label, v := range f {
		if st, ok := p.stream(v, item, "labels: "+label); ok {
			out[label] = st
		}
	}
	return out
}
