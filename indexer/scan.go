package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
	"github.com/tidemark-dev/tidemark/resolver"
)

// scan lists src, records the listing, then resolves the digests of tags that
// have none (of every listed tag when recheck is set). Only a failed listing or record fails the scan; digests that
// cannot be resolved are logged and tried again by the next scan.
func (ix *Indexer) scan(ctx context.Context, src *source, recheck bool) error {
	log := ix.log.With("source", src.Name, "image", src.repo.String())
	listed, err := ix.listings.start(ctx)
	defer listed()
	if err != nil {
		return fmt.Errorf("scan of %q interrupted: %w", src.Name, err)
	}
	started := time.Now()
	var requests atomic.Int64
	rt, tags, err := ix.listTags(ctx, log, src, &requests)
	if err != nil && ctx.Err() != nil {
		// Shutdown or a lost lock cut the listing short. Nothing is wrong with
		// the source, and recording a failure would make every deploy look
		// like one; the next scan, here or on the next leader, lists again.
		log.InfoContext(ctx, "scan interrupted", "cause", context.Cause(ctx),
			"requests", requests.Load(), "duration", time.Since(started))
		return fmt.Errorf("scan of %q interrupted: %w", src.Name, err)
	}
	res := resolver.ScanResult{
		Source:   src.Name,
		Started:  started,
		Finished: time.Now(),
		Complete: err == nil,
		Err:      err,
		Requests: int(requests.Load()),
	}
	var valid, unparsed int
	if err == nil {
		res.Tags = make([]resolver.Tag, 0, len(tags))
		for _, t := range tags {
			if src.Exclude != nil && src.Exclude.MatchString(t) {
				continue
			}
			ct, bad := unstorableTag(t)
			if !bad {
				ct = src.Classify(t)
			}
			if ct.Valid {
				valid++
			} else {
				unparsed++
			}
			res.Tags = append(res.Tags, ct)
		}
	}
	// A finished listing is recorded even when ctx ended meanwhile, rather
	// than thrown away; a bounded context keeps shutdown short.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	rec, aerr := ix.store.ApplyScan(wctx, res)
	if err == nil && aerr != nil {
		// The listing could not be written (a tag the database refuses, a
		// lost connection): record the failure, tags untouched, so that the
		// source's status does not go on showing the last success.
		err = fmt.Errorf("recording scan of %q: %w", src.Name, aerr)
		res.Err, res.Tags, res.Finished = err, nil, time.Now()
		_, aerr = ix.store.ApplyScan(wctx, res)
	}
	cancel()
	listed()
	applied := time.Now()
	if err != nil || aerr != nil {
		ix.metrics.scans.WithLabelValues(src.Name, "failed").Inc()
		if aerr != nil {
			log.ErrorContext(ctx, "recording failed scan", "err", aerr)
		} else {
			// The failure is recorded: this replica's status and metrics
			// show it now (the others hear the store's notification; this
			// one ignores its own).
			ix.changed(src.Name)
		}
		log.ErrorContext(ctx, "scan failed", "err", err, "requests", res.Requests, "duration", time.Since(started))
		return err
	}
	log.InfoContext(ctx, "listed", "tags", rec.TagsSeen, "new", rec.TagsNew, "gone", rec.TagsGone,
		"valid", valid, "unparsed", unparsed, "requests", res.Requests,
		"listing", res.Finished.Sub(started), "recording", applied.Sub(res.Finished))
	ix.metrics.tags.WithLabelValues(src.Name, "valid").Set(float64(valid))
	ix.metrics.tags.WithLabelValues(src.Name, "unparsed").Set(float64(unparsed))
	// Every recorded scan changes the source's status (last scan, its
	// outcome, tidemark_source_last_success_timestamp_seconds), whether or
	// not a tag changed.
	ix.changed(src.Name)

	var due []string
	if recheck {
		due = make([]string, len(res.Tags))
		for i, t := range res.Tags {
			due[i] = t.Name
		}
	} else if rec.Complete && rec.TagsNew == rec.TagsSeen && rec.TagsGone == 0 {
		// Every listed tag is new, so none has a digest, and every other
		// present tag came from a push, which records its digest: the
		// listing is the answer, without reading it back (a source's first
		// scan; 1,000 rows a source at a first index of 1,000 sources).
		due = make([]string, len(res.Tags))
		for i, t := range res.Tags {
			due[i] = t.Name
		}
		slices.Sort(due)
		due = slices.Compact(due)
	} else if due, err = ix.store.TagsWithoutDigest(ctx, src.Name); err != nil {
		err = fmt.Errorf("tags without digest of %q: %w", src.Name, err)
	}
	due = slices.DeleteFunc(due, func(t string) bool { return !isOCITag(t) })
	// The listing is recorded: let its tags go before the digest phase,
	// which waits for every other listing first. At a first index of 1,000
	// sources every scan waited here holding its classified tags, ~300 MB
	// at 1,000 x 1,000.
	res.Tags, tags = nil, nil
	derr := err
	if derr == nil && len(due) > 0 {
		ix.listings.wait(ctx, maxListingWait)
		select {
		case ix.digestSlots <- struct{}{}:
			derr = ix.resolveDigests(ctx, log, src, rt, due, &requests)
			<-ix.digestSlots
		case <-ctx.Done():
			derr = ctx.Err()
		}
	} else if derr == nil {
		derr = ix.resolveDigests(ctx, log, src, rt, due, &requests)
	}
	// Gates after digests: a new digest (a new tag, a re-tag) is checked
	// in the scan that found it. Not when the registry went down.
	var gerr error
	if !errors.Is(derr, errRegistryDown) {
		gerr = ix.checkGates(ctx, log, src, rt, nil, recheck)
	}
	if recheck && derr == nil {
		if err := ix.store.SetRecheckedAt(ctx, src.Name, time.Now()); err != nil {
			log.WarnContext(ctx, "recording the digest re-check; the next scheduled scan re-checks again", "err", err)
		}
	}
	// The scan was recorded before its digest requests were made.
	if more := int(requests.Load()) - res.Requests; more > 0 {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := ix.store.AddScanRequests(wctx, rec.ID, more); err != nil {
			log.WarnContext(ctx, "recording digest requests of the scan", "err", err, "requests", more)
		}
		cancel()
	}
	if errors.Is(derr, errRegistryDown) {
		// The listing was recorded as ok; the registry then went away. Say
		// so where operators look, the source's last scan, and not ok.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := ix.store.FailScan(wctx, rec.ID, derr); err != nil {
			log.ErrorContext(ctx, "recording the stopped digest phase", "err", err)
		}
		cancel()
		ix.metrics.scans.WithLabelValues(src.Name, "failed").Inc()
		log.ErrorContext(ctx, "registry down; digest phase stopped", "err", derr)
		return derr
	}
	ix.metrics.scans.WithLabelValues(src.Name, "ok").Inc()
	ix.metrics.duration.WithLabelValues(src.Name).Observe(time.Since(started).Seconds())
	ix.metrics.lastOK.WithLabelValues(src.Name).Set(float64(res.Finished.Unix()))
	switch {
	case derr != nil && ctx.Err() != nil:
		log.InfoContext(ctx, "digests interrupted; resumed next scan", "cause", context.Cause(ctx))
	case derr != nil:
		log.WarnContext(ctx, "digests incomplete; retried next scan", "err", derr)
	}
	if gerr != nil && ctx.Err() == nil {
		log.WarnContext(ctx, "gate checks incomplete; retried next scan", "err", gerr)
	}
	return nil
}

// listTags authenticates and lists every tag of src, counting requests in n.
// rt is the authenticated transport for further requests of this scan.
func (ix *Indexer) listTags(ctx context.Context, log *slog.Logger, src *source, n *atomic.Int64) (rt http.RoundTripper, tags []string, err error) {
	base, auth, err := ix.scanTransport(ctx, src, n)
	if err != nil {
		return nil, nil, registryhttp.ExplainUnreachable(src.repo.RegistryStr(), err)
	}
	var first *http.Response
	if auth == authn.Anonymous {
		first = ix.probe(ctx, src, base)
	}
	rt, err = ix.handshake(ctx, src, base, auth)
	if err != nil {
		if first != nil {
			first.Body.Close()
		}
		ix.pings.forget(src.repo.RegistryStr())
		return nil, nil, registryhttp.ExplainUnreachable(src.repo.RegistryStr(), err)
	}
	l := &lister{
		client:   &http.Client{Transport: rt},
		repo:     src.repo,
		pageSize: ix.pageSize,
		limits:   ix.pageLimits,
		progress: ix.listProgress(ctx, log, src, n),
		first:    first,
	}
	tags, err = l.list(ctx)
	if err != nil {
		// The registry's authentication may have changed under the
		// remembered ping: the next scan asks again.
		ix.pings.forget(src.repo.RegistryStr())
	}
	return rt, tags, registryhttp.ExplainUnreachable(src.repo.RegistryStr(), err)
}

// authTransport builds the scan's transport: counting, rate limit and retry
// under ggcr's authentication handshake (ping, then token if asked).
func (ix *Indexer) authTransport(ctx context.Context, src *source, n *atomic.Int64) (http.RoundTripper, error) {
	base, auth, err := ix.scanTransport(ctx, src, n)
	if err != nil {
		return nil, err
	}
	return ix.handshake(ctx, src, base, auth)
}

// scanTransport is a scan's transport before authentication (counting,
// rate limit, retries, remembered pings) and the credentials to use.
func (ix *Indexer) scanTransport(ctx context.Context, src *source, n *atomic.Int64) (http.RoundTripper, authn.Authenticator, error) {
	var rt http.RoundTripper = &registryhttp.CountTransport{Next: src.base, N: n, Registry: src.registry, Requests: ix.metrics.requests}
	rt = &registryhttp.LimitTransport{Next: rt, Limiter: src.limiter}
	policy := ix.retry
	if src.Timeout > 0 {
		policy.Timeout = src.Timeout
	}
	rt = &registryhttp.RetryTransport{Next: rt, Policy: policy}
	var auth authn.Authenticator
	if src.Password != nil {
		auth = &basicAuth{username: src.Username, password: src.Password}
	} else {
		a, err := authn.Resolve(ctx, ix.keychain, src.repo)
		if err != nil {
			return nil, nil, fmt.Errorf("credentials for %s from the keychain: %w", src.repo.RegistryStr(), err)
		}
		auth = a
	}
	return &pingTransport{next: rt, cache: ix.pings, anonymous: auth == authn.Anonymous}, auth, nil
}

// handshake is ggcr's authentication handshake over base (its ping
// answered from the cache when the registry's answer is known).
func (ix *Indexer) handshake(ctx context.Context, src *source, base http.RoundTripper, auth authn.Authenticator) (http.RoundTripper, error) {
	art, err := transport.NewWithContext(ctx, src.repo.Registry, auth, base, []string{src.repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, fmt.Errorf("authenticating to %s: %w", src.repo.RegistryStr(), err)
	}
	return art, nil
}

// basicAuth reads the password when a handshake needs it, never earlier, and
// never puts it in an error.
type basicAuth struct {
	username string
	password func() (string, error)
}

func (a *basicAuth) Authorization() (*authn.AuthConfig, error) {
	p, err := a.password()
	if err != nil {
		return nil, fmt.Errorf("reading the registry password for user %q: %w", a.username, err)
	}
	return &authn.AuthConfig{Username: a.username, Password: p}, nil
}

func (ix *Indexer) listProgress(ctx context.Context, log *slog.Logger, src *source, n *atomic.Int64) func(pages, tags int) {
	last := time.Now()
	return func(pages, tags int) {
		src.setProgress(func(p *Progress) { p.Pages, p.Tags, p.Requests = pages, tags, int(n.Load()) })
		if pages%20 == 0 || time.Since(last) >= ix.progressEvery {
			last = time.Now()
			log.InfoContext(ctx, "listing", "pages", pages, "tags", tags)
		}
	}
}

func (s *source) setProgress(f func(*Progress)) {
	s.mu.Lock()
	f(&s.progress)
	s.mu.Unlock()
}

func (ix *Indexer) changed(source string) {
	if ix.onChng != nil {
		ix.onChng(source)
	}
}
