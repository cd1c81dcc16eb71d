// Package gates checks release gates against a registry: whether a digest
// holds every required platform, and whether it carries a valid cosign
// signature. The soak gate needs no registry; resolver.EvaluateGates turns
// these results into a version's gate state.
package gates

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Config is one source's registry gates, parsed. The zero value checks nothing.
type Config struct {
	Platforms []v1.Platform // none: no platform gate
	Key       *Key          // nil: no signature gate
}

// Result is what the registry said about one digest.
type Result struct {
	Missing   []string  // platforms not held; nil when all are (or no platform gate)
	Signature Signature // zero State when there is no signature gate
}

// Pass reports whether the digest passes every registry gate of cfg.
func (r Result) Pass(cfg Config) bool {
	return len(r.Missing) == 0 && (cfg.Key == nil || r.Signature.State == SigOK)
}

// Checker runs gate checks with bounded concurrency and remembers results
// by digest, so that a rescan in which nothing changed and every version
// passes makes no registry request.
//
// What is remembered: a digest's platforms, pass or fail, since a digest's
// content never changes (arm64 added to a tag later is a new digest); and
// a valid signature, until MaxAge. A missing or invalid signature is never
// remembered: the signature may be pushed after the image, so a held
// version is asked about again on every check.
type Checker struct {
	opts   []remote.Option
	sem    chan struct{}
	maxAge time.Duration
	now    func() time.Time

	mu        sync.Mutex
	platforms map[platformKey][]string
	sigs      map[sigKey]sigEntry
}

type platformKey struct {
	digest string
	want   string // the wanted platforms, joined
}

type sigKey struct {
	repo, digest, key string
}

type sigEntry struct {
	sig Signature
	at  time.Time
}

// NewChecker returns a checker that makes at most concurrency checks at a
// time (each a few sequential requests) with opts (transport, auth), and
// trusts a valid signature for maxAge (0: until Forget). A source's digest
// re-check interval is the natural maxAge: a servable version's signature
// is looked at again on that schedule.
func NewChecker(concurrency int, maxAge time.Duration, opts ...remote.Option) *Checker {
	if concurrency < 1 {
		concurrency = 1
	}
	return &Checker{
		opts:      opts,
		sem:       make(chan struct{}, concurrency),
		maxAge:    maxAge,
		now:       time.Now,
		platforms: map[platformKey][]string{},
		sigs:      map[sigKey]sigEntry{},
	}
}

// Check runs cfg's gates on digest d of repo. An error (registry
// unreachable, context done) means the gates are unknown for now, not failed.
func (c *Checker) Check(ctx context.Context, repo name.Repository, d v1.Hash, cfg Config) (Result, error) {
	var res Result
	pk := platformKey{digest: d.String(), want: platformsKey(cfg.Platforms)}
	var sk sigKey
	if cfg.Key != nil {
		sk = sigKey{repo: repo.Name(), digest: d.String(), key: cfg.Key.ID()}
	}

	c.mu.Lock()
	missing, havePlatforms := c.platforms[pk]
	e, haveSig := c.sigs[sk]
	if haveSig && c.maxAge > 0 && c.now().Sub(e.at) >= c.maxAge {
		delete(c.sigs, sk)
		haveSig = false
	}
	c.mu.Unlock()
	havePlatforms = havePlatforms || len(cfg.Platforms) == 0
	haveSig = haveSig || cfg.Key == nil
	res.Missing, res.Signature = missing, e.sig
	if havePlatforms && haveSig {
		return res, nil
	}

	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Result{}, context.Cause(ctx)
	}
	defer func() { <-c.sem }()

	if !havePlatforms {
		m, err := Platforms(ctx, repo.Digest(d.String()), cfg.Platforms, c.opts...)
		if err != nil {
			return Result{}, err
		}
		res.Missing = m
		c.mu.Lock()
		c.platforms[pk] = m
		c.mu.Unlock()
	}
	if !haveSig {
		s, err := VerifySignature(ctx, repo, d, cfg.Key, c.opts...)
		if err != nil {
			return Result{}, err
		}
		res.Signature = s
		if s.State == SigOK {
			c.mu.Lock()
			c.sigs[sk] = sigEntry{sig: s, at: c.now()}
			c.mu.Unlock()
		}
	}
	return res, nil
}

// Forget drops what is remembered about digest d (in any repository), so
// that its next check asks the registry: for a signature that may have been
// withdrawn, or on an operator's rescan.
func (c *Checker) Forget(d v1.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.platforms {
		if k.digest == d.String() {
			delete(c.platforms, k)
		}
	}
	for k := range c.sigs {
		if k.digest == d.String() {
			delete(c.sigs, k)
		}
	}
}

func platformsKey(ps []v1.Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}
