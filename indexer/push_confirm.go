package indexer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Confirming a pushed tag with its registry: one manifest HEAD at a time,
// the retries scheduled by the queue (push.go), on a transport reused for
// a while per source.

var (
	errTagMissing = errors.New("tag not in the registry")
	errTryAgain   = errors.New("not in the registry yet")
)

// confirmOnce HEADs the tag's manifest once: its digest, errTagMissing
// once the registry has said 404 for pushWindow (for a delete: at once,
// retried only while the tag is still there), or errTryAgain with it.due
// set, doubling from pushRetryStart up to pushRetryMax, and past pushFast
// up to pushRetrySlow.
func (ix *Indexer) confirmOnce(ctx context.Context, src *source, it *pushItem) (string, error) {
	if ix.push == nil {
		return "", fmt.Errorf("%w: the indexer has no store for pushed tags", resolver.ErrUnavailable)
	}
	ev := it.ev
	now := time.Now()
	if it.attempt == 0 {
		it.deadline, it.wait = now.Add(pushWindow), pushRetryStart
	}
	rt, err := ix.pushTransport(ctx, src)
	if err != nil {
		return "", err
	}
	p, err := remote.NewPuller(remote.WithTransport(rt), remote.WithContext(ctx))
	if err != nil {
		return "", err
	}
	last := now.After(it.deadline)
	it.attempt++
	desc, err := p.Head(ctx, src.repo.Tag(ev.Tag))
	var terr *transport.Error
	missing := errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
	switch {
	case err == nil && !ev.Delete:
		return desc.Digest.String(), nil
	case missing && ev.Delete:
		return "", errTagMissing
	case err != nil && !missing:
		src.push.forgetTransport()
		return "", fmt.Errorf("HEAD manifest %s:%s: %w", src.repo, ev.Tag, err)
	case last && missing:
		return "", fmt.Errorf("HEAD manifest %s:%s: %w after %d attempts", src.repo, ev.Tag, errTagMissing, it.attempt)
	case last: // a delete, but the tag is (again) there
		return desc.Digest.String(), nil
	}
	it.due = time.Now().Add(it.wait)
	limit := pushRetryMax
	if now.After(it.deadline.Add(pushFast - pushWindow)) {
		limit = pushRetrySlow // past the first pushFast: a slow registry
	}
	it.wait = min(2*it.wait, limit)
	return "", errTryAgain
}

// pushTransport reuses src's authenticated transport for a while: a burst
// of pushes costs one registry handshake, not one each.
func (ix *Indexer) pushTransport(ctx context.Context, src *source) (http.RoundTripper, error) {
	q := &src.push
	q.mu.Lock()
	rt, at := q.rt, q.rtAt
	q.mu.Unlock()
	if rt != nil && time.Since(at) < pushTransportTTL {
		return rt, nil
	}
	var n atomic.Int64
	rt, err := ix.authTransport(ctx, src, &n)
	if err != nil {
		return nil, registryhttp.ExplainUnreachable(src.repo.RegistryStr(), err)
	}
	q.mu.Lock()
	q.rt, q.rtAt = rt, time.Now()
	q.mu.Unlock()
	return rt, nil
}

func (q *pushQueue) forgetTransport() {
	q.mu.Lock()
	q.rt = nil
	q.mu.Unlock()
}
