package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
	"github.com/tidemark-dev/tidemark/resolver"
)

// gateConfig parses src's registry gates once, at New: the platforms, and
// the signature key unless the configuration already read it.
func gateConfig(s *Source) (gates.Config, error) {
	var cfg gates.Config
	g := &s.Gates
	ps, err := gates.ParsePlatforms(g.Platforms)
	if err != nil {
		return cfg, fmt.Errorf("gates.platforms: %w", err)
	}
	if len(ps) > 0 {
		cfg.Platforms = ps
	}
	if g.SignatureKeyFile != "" {
		if s.SignatureKey == nil {
			if s.SignatureKey, err = gates.LoadKey(g.SignatureKeyFile); err != nil {
				return cfg, fmt.Errorf("gates.signature: %w", err)
			}
		}
		if g.SignatureKeyID == "" {
			g.SignatureKeyID = s.SignatureKey.ID()
		}
		cfg.Key = s.SignatureKey
	}
	return cfg, nil
}

// checkGates asks the registry about the platform and signature gates of
// src's versions that need it (resolver.NeedsGateCheck: never checked,
// re-tagged, or still held), or of all of them when recheck is set (the
// digest re-check schedule), and records the results. With names set, only
// those tags. A version that passed is not asked about again, so a no-change
// rescan in which every version is servable makes no request here. A
// version whose check fails (registry trouble) keeps its stored result,
// held if it was, and is asked again next scan.
func (ix *Indexer) checkGates(ctx context.Context, log *slog.Logger, src *source, rt http.RoundTripper, names []string, recheck bool) error {
	if src.gates.Key == nil && len(src.gates.Platforms) == 0 {
		return nil
	}
	targets, err := ix.store.GateTargets(ctx, src.Name, names)
	if err != nil {
		return fmt.Errorf("gate targets of %q: %w", src.Name, err)
	}
	var due []resolver.Tag
	for _, t := range targets {
		ct := src.Classify(t.Name)
		ct.Digest, ct.FirstSeen, ct.Gates = t.Digest, t.FirstSeen, t.Gates
		if resolver.NeedsGateCheck(src.Gates, &ct) || recheck && ct.Valid {
			due = append(due, ct)
		}
	}
	if len(due) == 0 {
		return nil
	}
	conc := src.Concurrency
	if conc <= 0 {
		conc = defaultConcurrency
	}
	// The checker bounds the requests in flight; its by-digest memory lasts
	// the scan only, since the store keeps the results between scans.
	checker := gates.NewChecker(conc, 0, remote.WithTransport(rt))
	started := time.Now()
	var (
		mu      sync.Mutex
		results = make(map[string]resolver.GateChecks, len(due))
		failed  int
		firstEr error
	)
	each(ctx, due, conc, func(t resolver.Tag) {
		c, err := ix.checkTag(ctx, checker, src, &t)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			if firstEr == nil {
				firstEr = err
			}
			return
		}
		results[t.Name] = c
	})
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	changed, err := ix.store.SetGateChecks(wctx, src.Name, results)
	cancel()
	if err != nil {
		return fmt.Errorf("recording %d gate checks: %w", len(results), err)
	}
	if changed {
		ix.changed(src.Name)
	}
	log.InfoContext(ctx, "gates checked", "checked", len(results), "failed", failed, "changed", changed,
		"duration", time.Since(started))
	if firstEr != nil {
		return fmt.Errorf("%d of %d gate checks failed, first: %w", failed, len(due), firstEr)
	}
	return ctx.Err()
}

// checkTag runs the registry gates of one tag. A platform result stored for
// the same digest and platforms is reused (a digest's content never
// changes); the signature is always asked about.
func (ix *Indexer) checkTag(ctx context.Context, checker *gates.Checker, src *source, t *resolver.Tag) (resolver.GateChecks, error) {
	d, err := v1.NewHash(t.Digest.String())
	if err != nil {
		return resolver.GateChecks{}, fmt.Errorf("tag %s: digest %q: %w", t.Name, t.Digest, err)
	}
	cfg := src.gates
	out := resolver.GateChecks{Digest: t.Digest, Platforms: src.Gates.Platforms, KeyID: src.Gates.SignatureKeyID, CheckedAt: time.Now()}
	if len(cfg.Platforms) > 0 && t.Gates.PlatformsFor(src.Gates, t.Digest) {
		out.MissingPlatforms = t.Gates.MissingPlatforms
		cfg.Platforms = nil
	}
	res, err := checker.Check(ctx, src.repo, d, cfg)
	if err != nil {
		return resolver.GateChecks{}, fmt.Errorf("gates of %s:%s: %w", src.repo, t.Name, err)
	}
	if len(cfg.Platforms) > 0 {
		out.MissingPlatforms = res.Missing
	}
	if cfg.Key != nil {
		out.Signature, out.SignatureReason = string(res.Signature.State), res.Signature.Reason
	}
	return out, nil
}

// GateTag checks the release gates of one tag of source now, as a scan
// would (the webhook path: a push event indexed at once). The tag must be
// indexed with its digest; a tag that passed before is checked again (the
// push may have moved it or added its signature). Nothing to do for a
// source without registry gates. ErrNotFound for an unknown source.
func (ix *Indexer) GateTag(ctx context.Context, source, tag string) error {
	src, ok := ix.sources[source]
	if !ok {
		return fmt.Errorf("%w: source %q", resolver.ErrNotFound, source)
	}
	if src.gates.Key == nil && len(src.gates.Platforms) == 0 {
		return nil
	}
	var n atomic.Int64
	rt, err := ix.authTransport(ctx, src, &n)
	if err != nil {
		return registryhttp.ExplainUnreachable(src.repo.RegistryStr(), err)
	}
	log := ix.log.With("source", src.Name, "image", src.repo.String(), "tag", tag)
	return ix.checkGates(ctx, log, src, rt, []string{tag}, true)
}

// signatureTag matches the tags cosign pushes beside an image: its
// signature, attestation or SBOM, named after the image's digest.
var signatureTag = regexp.MustCompile(`^sha256-([0-9a-f]{64})\.(sig|att|sbom)$`)

// GateSignedDigest re-checks the gates of every present tag of source whose
// digest a pushed signature tag names (sha256-<hex>.sig): a signature
// pushed after its image releases the version as soon as it arrives. ok is
// false when tag is no signature tag.
func (ix *Indexer) GateSignedDigest(ctx context.Context, source, tag string) (ok bool, err error) {
	m := signatureTag.FindStringSubmatch(tag)
	if m == nil {
		return false, nil
	}
	src, known := ix.sources[source]
	if !known {
		return true, fmt.Errorf("%w: source %q", resolver.ErrNotFound, source)
	}
	if src.gates.Key == nil {
		return true, nil
	}
	targets, err := ix.store.GateTargets(ctx, source, nil)
	if err != nil {
		return true, fmt.Errorf("gate targets of %q: %w", source, err)
	}
	var names []string
	for _, t := range targets {
		if t.Digest == resolver.ParseDigest("sha256:"+m[1]) {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return true, nil
	}
	var n atomic.Int64
	rt, err := ix.authTransport(ctx, src, &n)
	if err != nil {
		return true, registryhttp.ExplainUnreachable(src.repo.RegistryStr(), err)
	}
	log := ix.log.With("source", src.Name, "image", src.repo.String(), "signature", tag)
	return true, ix.checkGates(ctx, log, src, rt, names, true)
}
