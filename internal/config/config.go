// Package config reads Tidemark's one YAML configuration file (CONTRACT
// section 1), validates all of it up front and returns plain values that cmd/
// hands to the other packages. It is the only place that knows the file's
// keys, including the channelserver spellings that make a channels.yaml load
// as it is.
package config

import (
	"fmt"
	"net/netip"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Defaults of the contract.
const (
	DefaultListen      = ":8080"
	DefaultInterval    = 15 * time.Minute
	MinInterval        = 10 * time.Second
	DefaultConcurrency = 8
	DefaultAccessLog   = "sample"
	DefaultTimeout     = 30 * time.Second
	DefaultRecheck     = 24 * time.Hour
	// DefaultReadTimeout cuts off a request whose headers or body trickle
	// in; DefaultDatabaseTimeout bounds a request's database work (then
	// 503). Both as the contract says.
	DefaultReadTimeout     = 30 * time.Second
	DefaultDatabaseTimeout = 5 * time.Second
	// DockerHubRateLimit applies to docker.io unless registries: says otherwise:
	// anonymous Docker Hub clients that poll faster get throttled.
	DockerHubRateLimit = 10
)

// Config is a validated configuration. Env overrides are already applied.
type Config struct {
	File        string
	Listen      string // default ":8080"; env TIDEMARK_LISTEN overrides
	ExternalURL string // "" = derive from the request; never ends in "/"
	DatabaseURL string // env DATABASE_URL overrides
	// AccessLog is which requests get an access log line: "sample" (the
	// default: errors, writes and one in 100 of the rest), "all" or "off"
	// (errors only).
	AccessLog string
	// ReadTimeout bounds reading a whole request (headers: at most 10 s of
	// it); DatabaseTimeout a request's database work. Defaults above.
	ReadTimeout     time.Duration
	DatabaseTimeout time.Duration
	Sources         []Source
	Channels        []catalog.Channel
	// Registries holds rate limits per registry host as written in the file
	// (e.g. "docker.io", "ghcr.io"); "docker.io" is always present.
	Registries map[string]Registry
	Fleet      Fleet // fleet: retention and active window, defaults applied
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// Limits bound the listener's connections.
	Limits   Limits
	Webhooks Webhooks
	Notify   []Notify
	// RegistryView is how /v2/ serves channels as repositories.
	RegistryView RegistryView
	// OIDC signs people in; nil: tokens only.
	OIDC *OIDC
	// TUF publishes signed answers; nil: none.
	TUF      *TUF
	Warnings []string // e.g. ignored channelserver keys, one line each

	// sourcesYAML is `sources:` and `registries:` re-encoded (see SameSources).
	sourcesYAML string
}

// Source is one indexed repository. Its indexer.Source is built whole
// here (the password func included), so a key added to the file reaches
// the indexer without a copy in between; the rest is how it was written,
// for config check.
type Source struct {
	// Name, Image, Parser, Labels (nil: resolver.DefaultLabels), Interval
	// (default 15m), Exclude, Insecure, Concurrency (default 8), Timeout
	// (default 30s), Recheck (default 24h, < 0: never), Username, Password.
	indexer.Source

	Scheme resolver.Scheme
	Build  string // the build pattern as written
	// PasswordFile and PasswordEnv name where Password reads from; it reads
	// at use time so that a rotated secret needs no restart and never sits
	// in the Config (which config check prints).
	PasswordFile string
	PasswordEnv  string
	// ClusterAPI: the source answers Cluster API's GenerateUpgradePlan
	// hook as the handler named after it (CONTRACT section 13).
	ClusterAPI bool
}

// Registry is the politeness setting of one registry host.
type Registry struct {
	RateLimit float64 // requests per second; 0 = unlimited
}

// password returns a function reading a source's password at call time, or
// nil when the source has neither password_file nor password_env.
func password(source, file, env string, getenv func(string) string) func() (string, error) {
	switch {
	case file != "":
		return func() (string, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return "", fmt.Errorf("source %q: password_file: %w", source, err)
			}
			return strings.TrimRight(string(b), "\r\n"), nil
		}
	case env != "":
		return func() (string, error) {
			v := getenv(env)
			if v == "" {
				return "", fmt.Errorf("source %q: password_env: %s is empty: %w", source, env, resolver.ErrInvalid)
			}
			return v, nil
		}
	}
	return nil
}

// IndexerSources are the sources as the indexer takes them.
func (c *Config) IndexerSources() []indexer.Source {
	out := make([]indexer.Source, len(c.Sources))
	for i, s := range c.Sources {
		out[i] = s.Source
	}
	return out
}

// ResolverSources are the sources as the store and the server take them.
func (c *Config) ResolverSources() []catalog.Source {
	out := make([]catalog.Source, len(c.Sources))
	for i, s := range c.Sources {
		out[i] = s.Source.Source
	}
	return out
}

// ClusterAPISources names the sources with cluster_api: true.
func (c *Config) ClusterAPISources() []string {
	var out []string
	for _, s := range c.Sources {
		if s.ClusterAPI {
			out = append(out, s.Name)
		}
	}
	return out
}

// RateLimits are the registries' rate limits as the indexer takes them.
func (c *Config) RateLimits() map[string]float64 {
	out := make(map[string]float64, len(c.Registries))
	for host, r := range c.Registries {
		out[host] = r.RateLimit
	}
	return out
}

// SameSources reports whether o configures the same sources and registries
// as c: everything a running indexer was built from. It compares the
// `sources:` and `registries:` sections as written (comments, key order and
// YAML spelling aside), so a key added to them later cannot be missed.
// Durations written differently (60m, 1h) count as a change.
func (c *Config) SameSources(o *Config) bool {
	return c.sourcesYAML == o.sourcesYAML
}

// RestartChanges names the top-level settings other than sources and
// registries (SameSources) that differ between c and running and that only
// a restart applies: the listener, URLs, logging, timeouts, the fleet's
// retention, the webhooks' secrets and the notify endpoints. Channels are
// not among them (a reload applies them).
func (c *Config) RestartChanges(running *Config) []string {
	var out []string
	for _, k := range []struct {
		key  string
		same bool
	}{
		{"listen", c.Listen == running.Listen},
		{"external_url", c.ExternalURL == running.ExternalURL},
		{"database_url", c.DatabaseURL == running.DatabaseURL},
		{"access_log", c.AccessLog == running.AccessLog},
		{"read_timeout", c.ReadTimeout == running.ReadTimeout},
		{"database_timeout", c.DatabaseTimeout == running.DatabaseTimeout},
		{"fleet", reflect.DeepEqual(c.Fleet, running.Fleet)},
		{"limits", c.Limits == running.Limits},
		{"webhooks", c.Webhooks == running.Webhooks},
		{"notify", reflect.DeepEqual(c.Notify, running.Notify)},
		{"registry_view", c.RegistryView == running.RegistryView},
		{"oidc", reflect.DeepEqual(c.OIDC, running.OIDC)},
		{"tuf", sameTUF(c.TUF, running.TUF)},
	} {
		if !k.same {
			out = append(out, k.key)
		}
	}
	return out
}

// Source finds a configured source by name.
func (c *Config) Source(name string) (*Source, bool) {
	for i := range c.Sources {
		if c.Sources[i].Name == name {
			return &c.Sources[i], true
		}
	}
	return nil, false
}

// Problem is one thing wrong with a configuration file.
type Problem struct {
	Line int    // 1-based; 0 when the problem is not at a place in the file (env)
	Col  int    // 1-based; 0 when only the line is known
	Item string // e.g. `channel "v1.33"`; "" for top-level keys
	Msg  string // e.g. "excludeRegexp: missing closing ): `(a`"
}

// Error lists every problem found in one file. It wraps resolver.ErrInvalid.
type Error struct {
	File     string
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = e.line(p)
	}
	return strings.Join(lines, "\n")
}

func (e *Error) line(p Problem) string {
	var b strings.Builder
	b.WriteString(e.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Col > 0 {
			fmt.Fprintf(&b, ":%d", p.Col)
		}
	}
	b.WriteString(": ")
	if p.Item != "" {
		b.WriteString(p.Item)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return resolver.ErrInvalid }

// Load reads and parses the file at path. Choosing the path (flag or
// TIDEMARK_CONFIG) is the caller's business.
func Load(path string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data, getenv)
}

// Parse validates data, the contents of file (used in messages only), and
// applies the environment overrides read through getenv. The error, if any,
// is an *Error naming every problem.
func Parse(file string, data []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	p := &parser{file: file, getenv: getenv}
	cfg := p.parse(data)
	if len(p.problems) > 0 {
		return nil, &Error{File: file, Problems: p.sorted()}
	}
	return cfg, nil
}

// ShortDuration prints a duration as the configuration would say it: 15m
// and 24h, not Go's 15m0s and 24h0m0s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// sameTUF: the tuf: blocks differ only in online_key_file, which SIGHUP
// applies (after tidemark tuf rotate-online), or not at all.
func sameTUF(a, b *TUF) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.OnlineKeyFile, y.OnlineKeyFile = "", ""
	return x == y
}
