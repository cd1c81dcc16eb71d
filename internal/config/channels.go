package config

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/Masterminds/semver/v3"
	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

var channelKeys = []string{
	"name", "source", "stream", "constraint", "latest",
	"latestRegexp", "include", "excludeRegexp", "exclude", "builds", "redirect",
	"stepwise", "settle", "soak", "rollout", "approvals", "approval_ttl", "windows", "promote", "yank",
	"lifecycle",
}

// Channel names are the last element of /v1-release/channels/{name}, so
// they must be one clean path segment.
var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (p *parser) channels(n *yaml.Node, cfg *Config, d defaults, redirectBase string) []catalog.Channel {
	var out []catalog.Channel
	firstLine := map[string]int{}
	for i, el := range p.list(n, "", "channels") {
		var nameNode *yaml.Node
		if m := deref(el); m != nil && m.Kind == yaml.MappingNode {
			nameNode = valueOf(m, "name")
		}
		item := itemName("channel", i, nameNode)
		if isNull(deref(el)) {
			p.add(el, item, "empty entry")
			continue
		}
		f := p.mapping(el, item, "", channelKeys)
		before := len(p.problems)
		c := p.channel(f, item, deref(el), cfg, d, redirectBase)
		if first, dup := firstLine[c.Name]; dup && c.Name != "" {
			p.add(deref(f["name"]), item, "name: duplicate channel name (first on line %d)", first)
			continue
		}
		if c.Name != "" {
			firstLine[c.Name] = deref(f["name"]).Line
		}
		if len(p.problems) == before {
			out = append(out, c)
		}
	}
	for _, c := range out {
		if pr := c.Promote; pr != nil {
			if _, ok := firstLine[pr.From]; !ok || pr.From == c.Name {
				p.problems = append(p.problems, Problem{Line: firstLine[c.Name], Item: "channel \"" + c.Name + "\"",
					Msg: fmt.Sprintf("promote.from: %q is not another channel of this file", pr.From)})
			}
		}
	}
	return out
}

// yank reads a channel's yank: {max_stuck_ratio, min_told}.
func (p *parser) yank(n *yaml.Node, item string) *catalog.YankPolicy {
	if isNull(deref(n)) {
		return nil
	}
	f := p.mapping(n, item, "yank", []string{"max_stuck_ratio", "min_told"})
	out := &catalog.YankPolicy{MaxStuckRatio: 0.2, MinTold: 10}
	if i, ok := p.integer(f["min_told"], item, "yank.min_told"); ok {
		if i < 1 {
			p.add(deref(f["min_told"]), item, "yank.min_told: want 1 or more, got %d", i)
		} else {
			out.MinTold = i
		}
	}
	if r := deref(f["max_stuck_ratio"]); !isNull(r) {
		v, err := strconv.ParseFloat(r.Value, 64)
		if err != nil || v < 0 || v > 1 {
			p.add(r, item, "yank.max_stuck_ratio: want a ratio from 0 to 1 like 0.2, got %q", r.Value)
		} else {
			out.MaxStuckRatio = v
		}
	}
	return out
}

// promote reads a channel's promote: {from, soak, min_adopted,
// max_stuck_ratio}.
func (p *parser) promote(n *yaml.Node, item string) *catalog.PromotePolicy {
	if isNull(deref(n)) {
		return nil
	}
	f := p.mapping(n, item, "promote", []string{"from", "soak", "min_adopted", "max_stuck_ratio"})
	out := &catalog.PromotePolicy{Soak: 24 * time.Hour, MinAdopted: 1, MaxStuckRatio: 0.05}
	if s, ok := p.str(f["from"], item, "promote.from"); ok && s != "" {
		out.From = s
	} else {
		p.add(deref(n), item, "promote.from: missing (the channel whose answer this one follows)")
	}
	if d, ok := p.duration(f["soak"], item, "promote.soak"); ok {
		if d < 0 {
			p.add(deref(f["soak"]), item, "promote.soak: want a duration like 24h, got %s", d)
		} else {
			out.Soak = d
		}
	}
	if i, ok := p.integer(f["min_adopted"], item, "promote.min_adopted"); ok {
		if i < 1 {
			p.add(deref(f["min_adopted"]), item, "promote.min_adopted: want 1 or more, got %d", i)
		} else {
			out.MinAdopted = i
		}
	}
	if r := deref(f["max_stuck_ratio"]); !isNull(r) {
		v, err := strconv.ParseFloat(r.Value, 64)
		if err != nil || v < 0 || v > 1 {
			p.add(r, item, "promote.max_stuck_ratio: want a ratio from 0 to 1 like 0.05, got %q", r.Value)
		} else {
			out.MaxStuckRatio = v
		}
	}
	return out
}

func (p *parser) channel(f map[string]*yaml.Node, item string, at *yaml.Node, cfg *Config, d defaults, redirectBase string) catalog.Channel {
	var c catalog.Channel
	if v, ok := p.str(f["name"], item, "name"); !ok {
		p.add(at, item, "name: missing")
	} else if !channelName.MatchString(v) {
		p.add(deref(f["name"]), item, "name: %q is not a URL path segment ([A-Za-z0-9][A-Za-z0-9._-]*)", v)
	} else {
		c.Name = v
	}

	var src *Source
	if v, ok := p.str(f["source"], item, "source"); ok {
		c.Source = v
		if s, known := cfg.Source(v); known {
			src = s
		} else if src = p.broken[v]; src == nil {
			p.add(deref(f["source"]), item, "source: unknown source %q%s", v, p.knownSources())
		}
	} else if f["source"] == nil || isNull(deref(f["source"])) {
		c.Source = d.source
		if src, _ = cfg.Source(d.source); src == nil {
			src = p.broken[d.source]
		}
		if d.source == "" {
			p.add(at, item, "source: missing (and no defaults.source)")
		}
	}

	c.Stream = resolver.Released
	if d.hasStream {
		c.Stream = d.stream
	}
	if st, ok := p.stream(f["stream"], item, "stream"); ok {
		c.Stream = st
	}

	if v, ok := p.str(f["constraint"], item, "constraint"); ok {
		cons, err := semver.NewConstraint(v)
		if err != nil {
			p.add(deref(f["constraint"]), item, "constraint: %v", err)
		} else {
			c.Constraint, c.ConstraintText = cons, v
		}
	}
	c.Include = p.either(f, item, "latestRegexp", "include")
	c.Exclude = p.either(f, item, "excludeRegexp", "exclude")
	c.Builds = p.boolean(f["builds"], item, "builds")
	if !isNull(deref(f["soak"])) {
		// A channel's own soak, in place of its source's; 0 lifts it.
		d := p.soak(f["soak"], item, "soak")
		c.Soak = &d
	}

	c.Stepwise = p.boolean(f["stepwise"], item, "stepwise")
	if d, ok := p.duration(f["settle"], item, "settle"); ok {
		switch {
		case d < 0:
			p.add(deref(f["settle"]), item, "settle: want a duration >= 0, got %s", d)
		case !c.Stepwise:
			p.add(deref(f["settle"]), item, "settle: only a stepwise channel settles; add stepwise: true or remove settle")
		default:
			c.Settle = d
		}
	}

	c.Rollout = p.rollout(f["rollout"], item)
	c.Promote = p.promote(f["promote"], item)
	c.Yank = p.yank(f["yank"], item)
	c.UpgradeExpired = p.channelLifecycle(f["lifecycle"], item)
	p.governance(f, item, &c)

	c.Redirect = redirectBase
	if v, ok := p.str(f["redirect"], item, "redirect"); ok && p.redirect(f["redirect"], item, "redirect", v) {
		c.Redirect = v
	}

	if v, ok := p.str(f["latest"], item, "latest"); ok && src != nil && src.Parser != nil {
		// A fixed version must be one the source can ever serve; storing the
		// canonical spelling lets the resolver compare it as it does pins.
		ver, err := src.Parser.Parse(v)
		if err != nil {
			p.add(deref(f["latest"]), item, "latest: not a %s version: %s", src.Scheme, trimInvalid(err))
		} else {
			c.Latest = ver.String()
		}
	}
	return c
}

// either reads a regexp that has two spellings (channelserver's and the
// short one); giving both is ambiguous.
func (p *parser) either(f map[string]*yaml.Node, item, long, short string) *regexp.Regexp {
	if f[long] != nil && f[short] != nil {
		p.add(deref(f[short]), item, "%s: same as %s; give one", short, long)
		return nil
	}
	key := long
	if f[long] == nil {
		key = short
	}
	re, _ := p.regexp(f[key], item, key)
	return re
}

// rollout reads `rollout: {steps: [1, 10, 50, 100], interval: 1h}`: steps
// are percents of clusters, strictly ascending within 1..100, the last 100
// (a rollout that never reaches everyone would never finish).
func (p *parser) rollout(n *yaml.Node, item string) *resolver.RolloutPolicy {
	if isNull(deref(n)) {
		return nil
	}
	before := len(p.problems)
	f := p.mapping(n, item, "rollout", []string{"steps", "interval"})
	var pol resolver.RolloutPolicy
	stepsNode := deref(f["steps"])
	if isNull(stepsNode) {
		p.add(deref(n), item, "rollout.steps: missing (percents of clusters, e.g. [1, 10, 50, 100])")
	}
	for _, el := range p.list(f["steps"], item, "rollout.steps") {
		v, ok := p.integer(el, item, "rollout.steps")
		switch {
		case !ok:
		case v < 1 || v > 100:
			p.add(deref(el), item, "rollout.steps: %d is not a percent in 1..100", v)
		case len(pol.Steps) > 0 && v <= pol.Steps[len(pol.Steps)-1]:
			p.add(deref(el), item, "rollout.steps: %d after %d; want ascending percents", v, pol.Steps[len(pol.Steps)-1])
		default:
			pol.Steps = append(pol.Steps, v)
		}
	}
	if k := len(pol.Steps); k > 0 && pol.Steps[k-1] != 100 {
		p.add(stepsNode, item, "rollout.steps: the last step is %d; want 100, so that the rollout completes", pol.Steps[k-1])
	}
	if d, ok := p.duration(f["interval"], item, "rollout.interval"); ok {
		if d <= 0 {
			p.add(deref(f["interval"]), item, "rollout.interval: want a duration > 0, got %s", d)
		}
		pol.Interval = d
	} else if f["interval"] == nil {
		p.add(deref(n), item, "rollout.interval: missing (how long each step lasts, e.g. 1h)")
	}
	if len(p.problems) != before {
		return nil
	}
	return &pol
}
