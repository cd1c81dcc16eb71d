package config

import (
	"os"
	"path/filepath"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// lifecycle reads a source's lifecycle: {support: {minors, grace},
// deprecate_before, end: {line: date}, file}. A file is read relative to
// the configuration file's directory, now: a SIGHUP reads it again.
func (p *parser) lifecycle(n *yaml.Node, item string) lifecycle.Policy {
	var out lifecycle.Policy
	if isNull(deref(n)) {
		return out
	}
	f := p.mapping(n, item, "lifecycle", []string{"support", "deprecate_before", "end", "file"})
	if s := deref(f["support"]); !isNull(s) {
		sf := p.mapping(s, item, "lifecycle.support", []string{"minors", "grace"})
		if i, ok := p.integer(sf["minors"], item, "lifecycle.support.minors"); ok {
			if i < 1 {
				p.add(deref(sf["minors"]), item, "lifecycle.support.minors: want 1 or more, got %d", i)
			} else {
				out.Minors = i
			}
		} else if sf["minors"] == nil {
			p.add(s, item, "lifecycle.support.minors: missing (how many newer lines a line is supported for, like 3)")
		}
		if d, ok := p.duration(sf["grace"], item, "lifecycle.support.grace"); ok {
			if d < 0 {
				p.add(deref(sf["grace"]), item, "lifecycle.support.grace: want a duration >= 0, got %s", d)
			} else {
				out.Grace = d
			}
		}
	}
	if d, ok := p.duration(f["deprecate_before"], item, "lifecycle.deprecate_before"); ok {
		if d <= 0 {
			p.add(deref(f["deprecate_before"]), item, "lifecycle.deprecate_before: want a positive duration like 60d, got %s", d)
		} else {
			out.DeprecateBefore = d
		}
	}
	if e := deref(f["end"]); !isNull(e) {
		if e.Kind != yaml.MappingNode {
			p.add(e, item, "lifecycle.end: want a mapping of line to date, like {\"1.31\": 2026-10-28}, got %s", describe(e))
		} else {
			out.End = map[string]time.Time{}
			for i := 0; i+1 < len(e.Content); i += 2 {
				k, v := deref(e.Content[i]), deref(e.Content[i+1])
				if _, _, err := lifecycle.ParseLine(k.Value); err != nil {
					p.add(k, item, "lifecycle.end: %v", err)
					continue
				}
				if _, dup := out.End[k.Value]; dup {
					p.add(k, item, "lifecycle.end: duplicate line %q", k.Value)
					continue
				}
				d, err := lifecycle.ParseDate(v.Value)
				if v.Kind != yaml.ScalarNode || err != nil {
					p.add(v, item, "lifecycle.end.%s: %q is not a date (want YYYY-MM-DD)", k.Value, v.Value)
					continue
				}
				out.End[k.Value] = d
			}
		}
	}
	if file, ok := p.str(f["file"], item, "lifecycle.file"); ok {
		path := file
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(p.file), path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			p.add(deref(f["file"]), item, "lifecycle.file: %v", err)
			return out
		}
		cycles, err := lifecycle.ParseFile(data)
		if err != nil {
			p.add(deref(f["file"]), item, "lifecycle.file: %s: %v", file, err)
			return out
		}
		out.Cycles, out.File = cycles, path
	}
	return out
}

// channelLifecycle reads a channel's lifecycle: {upgrade_expired}.
func (p *parser) channelLifecycle(n *yaml.Node, item string) bool {
	if isNull(deref(n)) {
		return false
	}
	f := p.mapping(n, item, "lifecycle", []string{"upgrade_expired"})
	return p.boolean(f["upgrade_expired"], item, "lifecycle.upgrade_expired")
}

// Lifecycles maps each source to its lifecycle policy, as a reload
// applies them (live.Snapshots.SetLifecycle).
func (c *Config) Lifecycles() map[string]lifecycle.Policy {
	out := make(map[string]lifecycle.Policy, len(c.Sources))
	for _, s := range c.Sources {
		out[s.Name] = s.Lifecycle
	}
	return out
}
