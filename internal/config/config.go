// Package config reads Tidemark's one YAML configuration file (CONTRACT
// section 1), validates all of it up front and returns plain values that cmd/
// hands to the other packages. It is the only place that knows the file's
// keys, including the channelserver spellings that make a channels.yaml load
// as it is.
package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Defaults of the contract.
const (
	DefaultListen      = ":8080"
	DefaultInterval    = 15 * time.Minute
	MinInterval        = 10 * time.Second
	DefaultConcurrency = 8
	DefaultTimeout     = 30 * time.Second
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
	Sources     []Source
	Channels    []resolver.Channel
	// Registries holds rate limits per registry host as written in the file
	// (e.g. "docker.io", "ghcr.io"); "docker.io" is always present.
	Registries map[string]Registry
	Warnings   []string // e.g. ignored channelserver keys, one line each
}

// Source is one indexed repository.
type Source struct {
	resolver.Source // Name, Image, Parser, Labels (nil: resolver.DefaultLabels)

	Scheme      resolver.Scheme
	Build       string         // the build pattern as written
	Interval    time.Duration  // default 15m
	Exclude     *regexp.Regexp // raw tags never stored; nil: none
	Insecure    bool
	Concurrency int           // digest resolution; default 8
	Timeout     time.Duration // per registry request; default 30s
	Username    string
	// PasswordFile and PasswordEnv name where the password is; it is read at
	// use time so that a rotated secret needs no restart and never sits in
	// the Config (which config check prints).
	PasswordFile string
	PasswordEnv  string
}

// Registry is the politeness setting of one registry host.
type Registry struct {
	RateLimit float64 // requests per second; 0 = unlimited
}

// Password returns a function reading the source's password at call time, or
// nil when the source has neither password_file nor password_env.
func (s *Source) Password(getenv func(string) string) func() (string, error) {
	switch {
	case s.PasswordFile != "":
		file := s.PasswordFile
		return func() (string, error) {
			b, err := os.ReadFile(file)
			if err != nil {
				return "", fmt.Errorf("source %q: password_file: %w", s.Name, err)
			}
			return strings.TrimRight(string(b), "\r\n"), nil
		}
	case s.PasswordEnv != "":
		name := s.PasswordEnv
		return func() (string, error) {
			v := getenv(name)
			if v == "" {
				return "", fmt.Errorf("source %q: password_env: %s is empty: %w", s.Name, name, resolver.ErrInvalid)
			}
			return v, nil
		}
	}
	return nil
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
