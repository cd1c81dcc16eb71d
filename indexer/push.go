package indexer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
)

// A registry webhook names one tag; indexing it is one manifest HEAD and one
// upsert, never a listing. The event itself is only a hint: what is stored
// is what the registry answers.

// PushStore is what indexing one pushed tag needs of *store.Store.
type PushStore interface {
	IndexTag(ctx context.Context, source string, t resolver.Tag, seen time.Time) (changed bool, err error)
	MarkTagAbsent(ctx context.Context, source, tag string) (changed bool, err error)
}

// PushEvent is one tag a registry says was pushed or deleted.
type PushEvent struct {
	// Host is the registry as the event names it ("" when it names none:
	// then the repository alone is matched).
	Host string
	// Repository is the repository path within the registry ("org/app";
	// Docker Hub's "nginx" is "library/nginx").
	Repository string
	Tag        string
	Delete     bool
	Received   time.Time // when the webhook arrived, for the latency metric
}

// Confirmation retries: a registry may notify a few milliseconds before a
// push is visible to readers (distribution sends its event before the
// client's last request returns), so a missing tag is asked for again,
// doubling from pushRetryStart up to pushRetryMax (so that a tag that shows
// up late is seen within pushRetryMax of it), for pushWindow in all.
var (
	pushRetryStart = 2 * time.Millisecond
	pushRetryMax   = 25 * time.Millisecond
	pushWindow     = 1500 * time.Millisecond
	// pushTransportTTL is how long an authenticated transport is reused for
	// pushes of one source; a rejected token is renewed by ggcr anyway.
	pushTransportTTL = 10 * time.Minute
)

// pushQueue coalesces a source's pushed tags: a burst of events for one
// source is worked through by one goroutine, the latest event of a tag
// standing for the ones before it.
type pushQueue struct {
	mu      sync.Mutex
	pending map[string]PushEvent
	order   []string
	working bool
	rt      http.RoundTripper
	rtAt    time.Time
}

type pushMetrics struct {
	tags    *prometheus.CounterVec // source, outcome
	latency prometheus.Histogram
}

func newPushMetrics(reg prometheus.Registerer) (*pushMetrics, error) {
	m := &pushMetrics{
		tags: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tidemark", Subsystem: "indexer", Name: "pushed_tags_total",
			Help: "Tags named by registry webhooks, by outcome (indexed, unchanged, deleted, missing, excluded, failed).",
		}, []string{"source", "outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tidemark", Subsystem: "indexer", Name: "push_to_indexed_seconds",
			Help:    "Time from a webhook's arrival to its tag being indexed and applied to this replica's snapshot queue.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.tags, m.latency} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering push metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Match lists the sources whose image is ev's repository. The repository
// path must be equal (Docker Hub's library/ and host spellings normalised);
// when the event names a host that some of those sources use, only they
// match, else every source with that path does (a registry behind a proxy
// often knows itself by another name, and a wrong match costs one HEAD).
func (ix *Indexer) Match(ev PushEvent) []string {
	path, host := normalizeRepo(ev.Host, ev.Repository)
	var byPath, byHost []string
	for _, src := range ix.order {
		if src.repo.RepositoryStr() != path {
			continue
		}
		byPath = append(byPath, src.Name)
		if host != "" && src.registry == host {
			byHost = append(byHost, src.Name)
		}
	}
	if len(byHost) > 0 {
		return byHost
	}
	return byPath
}

// normalizeRepo spells an event's repository as ggcr spells a source's.
func normalizeRepo(host, repo string) (path, key string) {
	repo = strings.Trim(repo, "/")
	if host != "" {
		if k, err := registryKey(host); err == nil {
			key = k
		}
	}
	if key == name.DefaultRegistry && !strings.Contains(repo, "/") {
		repo = "library/" + repo
	}
	return repo, key
}

// Push queues ev's tag for every matching source and returns those
// sources; none means the repository is not indexed here. Work runs under
// ctx (the service's, not a request's) and Run waits for it.
func (ix *Indexer) Push(ctx context.Context, ev PushEvent) []string {
	if ev.Received.IsZero() {
		ev.Received = time.Now()
	}
	matched := ix.Match(ev)
	for _, n := range matched {
		src := ix.sources[n]
		q := &src.push
		q.mu.Lock()
		if q.pending == nil {
			q.pending = map[string]PushEvent{}
		}
		if _, queued := q.pending[ev.Tag]; !queued {
			q.order = append(q.order, ev.Tag)
		} else if old := q.pending[ev.Tag]; old.Received.Before(ev.Received) {
			ev.Received = old.Received // latency counts from the first event
		}
		q.pending[ev.Tag] = ev
		start := !q.working
		q.working = true
		q.mu.Unlock()
		if start {
			ix.scans.add()
			go func() {
				defer ix.scans.done()
				ix.pushWorker(ctx, src)
			}()
		}
	}
	return matched
}

// pushWorker indexes src's queued tags until the queue is empty.
func (ix *Indexer) pushWorker(ctx context.Context, src *source) {
	q := &src.push
	for {
		q.mu.Lock()
		if len(q.order) == 0 || ctx.Err() != nil {
			q.working = false
			q.pending, q.order = nil, nil
			q.mu.Unlock()
			return
		}
		tag := q.order[0]
		q.order = q.order[1:]
		ev := q.pending[tag]
		delete(q.pending, tag)
		q.mu.Unlock()
		var st pushStats
		outcome, err := ix.indexPushed(ctx, src, ev, &st)
		ix.pushMetrics.tags.WithLabelValues(src.Name, outcome).Inc()
		log := ix.log.With("source", src.Name, "tag", ev.Tag, "outcome", outcome, "delete", ev.Delete,
			"since_event", time.Since(ev.Received), "queued", st.queued, "registry_requests", st.heads,
			"confirming", st.confirming, "recording", st.recording)
		if err != nil {
			log.WarnContext(ctx, "pushed tag not indexed; the next scan will see it", "err", err)
			continue
		}
		log.InfoContext(ctx, "pushed tag")
	}
}

// pushStats say where a pushed tag's time went, for the log.
type pushStats struct {
	queued, confirming, recording time.Duration
	heads                         int
}

// indexPushed confirms one tag with the registry and records what it said.
func (ix *Indexer) indexPushed(ctx context.Context, src *source, ev PushEvent, st *pushStats) (outcome string, err error) {
	if src.Exclude != nil && src.Exclude.MatchString(ev.Tag) {
		return "excluded", nil
	}
	t0 := time.Now()
	st.queued = t0.Sub(ev.Received)
	digest, err := ix.confirm(ctx, src, ev, &st.heads)
	t1 := time.Now()
	st.confirming = t1.Sub(t0)
	defer func() { st.recording = time.Since(t1) }()
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	var changed bool
	switch {
	case errors.Is(err, errTagMissing) && ev.Delete:
		outcome = "deleted"
		changed, err = ix.push.MarkTagAbsent(wctx, src.Name, ev.Tag)
	case errors.Is(err, errTagMissing):
		return "missing", err
	case err != nil:
		return "failed", err
	default:
		outcome = "indexed"
		t := src.Classify(ev.Tag)
		t.Digest = digest
		changed, err = ix.push.IndexTag(wctx, src.Name, t, time.Now())
	}
	if err != nil {
		return "failed", err
	}
	if !changed {
		return "unchanged", nil
	}
	if outcome == "indexed" {
		// A gated source serves the tag only once its gates pass: check
		// them now, as a scan would, rather than at the next scan. A
		// failed check leaves the tag held (never served on no answer).
		if gerr := ix.GateTag(wctx, src.Name, ev.Tag); gerr != nil {
			ix.log.WarnContext(ctx, "release gates of a pushed tag not checked; the next scan checks them",
				"source", src.Name, "tag", ev.Tag, "err", gerr)
		}
	}
	ix.changed(src.Name)
	ix.pushMetrics.latency.Observe(time.Since(ev.Received).Seconds())
	return outcome, nil
}

var errTagMissing = errors.New("tag not in the registry")

// confirm HEADs the tag's manifest: its digest, or errTagMissing once the
// registry has said 404 for long enough (for a delete: at once, retried only
// while the tag is still there).
func (ix *Indexer) confirm(ctx context.Context, src *source, ev PushEvent, heads *int) (string, error) {
	if ix.push == nil {
		return "", fmt.Errorf("%w: the indexer has no store for pushed tags", resolver.ErrUnavailable)
	}
	rt, err := ix.pushTransport(ctx, src)
	if err != nil {
		return "", err
	}
	p, err := remote.NewPuller(remote.WithTransport(rt), remote.WithContext(ctx))
	if err != nil {
		return "", err
	}
	wait := pushRetryStart
	deadline := time.Now().Add(pushWindow)
	for attempt := 1; ; attempt++ {
		last := time.Now().After(deadline)
		*heads = attempt
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
			return "", fmt.Errorf("HEAD manifest %s:%s: %w after %d attempts", src.repo, ev.Tag, errTagMissing, attempt)
		case last: // a delete, but the tag is (again) there
			return desc.Digest.String(), nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, pushRetryMax)
	}
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
		return nil, explainUnreachable(src.repo.RegistryStr(), err)
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

func pushStoreOf(opts Options) PushStore {
	if opts.PushStore != nil {
		return opts.PushStore
	}
	ps, _ := opts.Store.(PushStore)
	return ps
}
