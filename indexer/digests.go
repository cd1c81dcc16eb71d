package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
)

const (
	defaultConcurrency = 8
	// Resolved digests are written every digestBatch or digestFlushEvery,
	// whichever comes first, so that a kill loses at most that much work
	// and a long resolution shows up as it goes.
	digestBatch      = 50
	digestFlushEvery = time.Second
	// breakerTrips is how many digest requests in a row may find the
	// registry down (no connection, a timeout, a 5xx after retries) before
	// the digest phase stops: the rest would only fail the same way, each
	// after its own retries.
	breakerTrips = 5
)

// errRegistryDown marks a digest phase that the circuit breaker stopped.
var errRegistryDown = errors.New("registry down")

// resolveDigests HEADs the manifest of every tag in due and records the
// digests. A no-change rescan has none due and makes no request. When
// breakerTrips requests in a row find the registry down, it stops, keeps
// what was resolved, and returns an error wrapping errRegistryDown.
func (ix *Indexer) resolveDigests(ctx context.Context, log *slog.Logger, src *source, rt http.RoundTripper, due []string, n *atomic.Int64) error {
	pending := ix.metrics.tags.WithLabelValues(src.Name, "pending_digest")
	pending.Set(float64(len(due)))
	src.setProgress(func(p *Progress) { p.Phase, p.DigestsDue = "digests", len(due) })
	if len(due) == 0 {
		return nil
	}
	// Requests run under hctx, which the breaker cancels; writes under ctx,
	// so that what was resolved is kept.
	hctx, trip := context.WithCancelCause(ctx)
	defer trip(nil)
	// rt is already authenticated (a *transport.Wrapper), so ggcr neither
	// re-authenticates nor adds its own retries.
	puller, err := remote.NewPuller(remote.WithTransport(rt), remote.WithContext(hctx))
	if err != nil {
		return err
	}
	conc := src.Concurrency
	if conc <= 0 {
		conc = defaultConcurrency
	}
	started := time.Now()
	var (
		mu        sync.Mutex
		batch     = map[string]string{}
		done      int
		resolved  int
		failed    int
		downInRow int
		firstEr   error
		lastLog   = time.Now()
		lastFlush = time.Now()
	)
	flush := func() error { // with mu held
		lastFlush = time.Now()
		if len(batch) == 0 {
			return nil
		}
		if err := ix.store.SetDigests(ctx, src.Name, batch); err != nil {
			return fmt.Errorf("recording %d digests: %w", len(batch), err)
		}
		pending.Sub(float64(len(batch)))
		batch = map[string]string{}
		ix.changed(src.Name)
		return nil
	}
	each(hctx, due, conc, func(tag string) {
		d, herr := ix.head(hctx, puller, src, tag)
		mu.Lock()
		switch {
		case herr != nil && hctx.Err() != nil:
			// Cut short by the breaker or shutdown: not a failure
			// of this tag.
		case herr != nil:
			done++
			failed++
			if firstEr == nil {
				firstEr = herr
			}
			if registryDown(herr) {
				downInRow++
				if downInRow >= breakerTrips {
					trip(fmt.Errorf("%w: registry %s: %d digest requests in a row failed, last: %w",
						errRegistryDown, src.registry, downInRow, herr))
				}
			} else {
				downInRow = 0
			}
		default:
			done++
			resolved++
			downInRow = 0
			batch[tag] = d
		}
		if len(batch) >= digestBatch || time.Since(lastFlush) >= digestFlushEvery {
			if err := flush(); err != nil && firstEr == nil {
				firstEr = err
			}
		}
		src.setProgress(func(p *Progress) { p.Digests, p.Requests = done, int(n.Load()) })
		if time.Since(lastLog) >= ix.progressEvery {
			lastLog = time.Now()
			log.InfoContext(ctx, "resolving digests", "done", done, "of", len(due), "failed", failed)
		}
		mu.Unlock()
	})
	if err := flush(); err != nil && firstEr == nil {
		firstEr = err
	}
	log.InfoContext(ctx, "digests resolved", "resolved", resolved, "failed", failed,
		"requests", n.Load(), "duration", time.Since(started))
	unresolved := len(due) - resolved
	if cause := context.Cause(hctx); errors.Is(cause, errRegistryDown) && ctx.Err() == nil {
		return fmt.Errorf("digests stopped, %d of %d unresolved (next scan): %w", unresolved, len(due), cause)
	}
	if firstEr == nil && ctx.Err() != nil {
		firstEr = ctx.Err()
	}
	if firstEr != nil {
		return fmt.Errorf("%d of %d digests unresolved, first: %w", unresolved, len(due), firstEr)
	}
	return nil
}

// registryDown reports a failure that says the registry is not serving at
// all, as opposed to one tag's trouble (a 404, a 401): no connection, no
// answer in time, or a 5xx, each after the retry layer gave up.
func registryDown(err error) bool {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode >= 500
	}
	var unreach *registryhttp.UnreachableError
	return registryhttp.Transient(err) || errors.As(registryhttp.ExplainUnreachable("", err), &unreach)
}

func (ix *Indexer) head(ctx context.Context, p *remote.Puller, src *source, tag string) (string, error) {
	desc, err := p.Head(ctx, src.repo.Tag(tag))
	if err != nil {
		return "", fmt.Errorf("HEAD manifest %s:%s: %w", src.repo, tag, err)
	}
	return desc.Digest.String(), nil
}
