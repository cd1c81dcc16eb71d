package indexer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/metric"

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
// up late is seen within pushRetryMax of it) for pushFast, then up to
// pushRetrySlow, for pushWindow in all. The window was 1.5 s until a loaded
// test machine's registry took longer to show a tag it had announced: 5 s
// matches how soon a push must be served, and a tag never shown costs
// ~70 HEADs (60 in the first 1.5 s).
var (
	pushRetryStart = 2 * time.Millisecond
	pushRetryMax   = 25 * time.Millisecond
	pushRetrySlow  = 500 * time.Millisecond
	pushFast       = 1500 * time.Millisecond
	pushWindow     = 5 * time.Second
	// pushTransportTTL is how long an authenticated transport is reused for
	// pushes of one source; a rejected token is renewed by ggcr anyway.
	pushTransportTTL = 10 * time.Minute
)

// pushQueue coalesces a source's pushed tags: the latest event of a tag
// stands for the ones before it. Up to pushWorkers goroutines work through
// it, fresh events before retries: a tag the registry does not (yet) have
// is asked again later (see confirmOnce) without holding a worker, so a
// flood of events naming absent tags delays a real push by one HEAD each
// at most, and the queue is bounded (MaxPending; over it, Push refuses).
type pushQueue struct {
	mu      sync.Mutex
	pending map[string]*pushItem
	order   []string    // fresh tags, first in first out
	retry   []*pushItem // tags waiting for their next HEAD
	workers int
	wake    chan struct{}
	rt      http.RoundTripper
	rtAt    time.Time
}

// pushItem is one queued tag and where its confirmation stands.
type pushItem struct {
	ev       PushEvent
	attempt  int           // HEADs so far
	wait     time.Duration // before the next one
	due      time.Time     // of the next one
	deadline time.Time     // after which a 404 is final
}

// pushWorkers is how many tags of one source are worked at once, and how
// many look-ups one registry gets at once across its sources (pushSlots):
// a few, so that a registry is not flooded by webhooks.
const pushWorkers = 4

// ErrPushQueueFull is Push's answer when a source already has MaxPending
// tags queued (the webhook answers 429).
var ErrPushQueueFull = errors.New("too many pushed tags queued")

type pushMetrics struct {
	tags    *prometheus.CounterVec // source, outcome
	latency prometheus.Histogram
}

func newPushMetrics(reg prometheus.Registerer) (*pushMetrics, error) {
	m := &pushMetrics{
		tags: metric.CounterVec("tidemark_indexer_pushed_tags_total",
			"Tags named by registry webhooks, by outcome (indexed, unchanged, deleted, missing, excluded, signature, failed).", "source", "outcome"),
		latency: metric.Histogram("tidemark_indexer_push_to_indexed_seconds",
			"Time from a webhook's arrival to its tag being indexed and applied to this replica's snapshot queue.", prometheus.ExponentialBuckets(0.001, 2, 14)),
	}
	if err := metric.Register(reg, "push", m.tags, m.latency); err != nil {
		return nil, err
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
// sources; none means the repository is not indexed here. A source whose
// queue is full refuses the tag: err wraps ErrPushQueueFull. Work runs under
// ctx (the service's, not a request's) and Run waits for it.
func (ix *Indexer) Push(ctx context.Context, ev PushEvent) ([]string, error) {
	if ev.Received.IsZero() {
		ev.Received = time.Now()
	}
	matched := ix.Match(ev)
	var full []string
	for _, n := range matched {
		src := ix.sources[n]
		q := &src.push
		q.mu.Lock()
		if q.pending == nil {
			q.pending = map[string]*pushItem{}
			q.wake = make(chan struct{}, 1)
		}
		if it, queued := q.pending[ev.Tag]; queued {
			if it.ev.Received.Before(ev.Received) {
				ev.Received = it.ev.Received // latency counts from the first event
			}
			it.ev = ev
		} else if len(q.pending) >= ix.maxPending {
			q.mu.Unlock()
			full = append(full, n)
			continue
		} else {
			q.pending[ev.Tag] = &pushItem{ev: ev}
			q.order = append(q.order, ev.Tag)
		}
		start := q.workers < pushWorkers
		if start {
			q.workers++
		}
		select {
		case q.wake <- struct{}{}:
		default:
		}
		q.mu.Unlock()
		if start {
			ix.scans.add()
			go func() {
				defer ix.scans.done()
				ix.pushWorker(ctx, src)
			}()
		}
	}
	if len(full) > 0 {
		return matched, fmt.Errorf("%w: source %s already has %d tags queued (webhooks.max_pending)",
			ErrPushQueueFull, strings.Join(full, ", "), ix.maxPending)
	}
	return matched, nil
}

// next takes the queue's next piece of work: a fresh tag, else a retry
// that is due. With none due it says how long until one is; done is true
// when the queue is empty (and the worker has left it).
func (q *pushQueue) next(now time.Time) (it *pushItem, wait time.Duration, done bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) > 0 {
		tag := q.order[0]
		q.order = q.order[1:]
		it = q.pending[tag]
		delete(q.pending, tag)
		return it, 0, false
	}
	if len(q.retry) == 0 {
		q.workers--
		return nil, 0, true
	}
	first := 0
	for i, r := range q.retry {
		if r.due.Before(q.retry[first].due) {
			first = i
		}
	}
	if it = q.retry[first]; !it.due.After(now) {
		q.retry = append(q.retry[:first], q.retry[first+1:]...)
		if cur := q.pending[it.ev.Tag]; cur == it {
			delete(q.pending, it.ev.Tag)
		}
		return it, 0, false
	}
	return nil, it.due.Sub(now), false
}

// later puts it back to be asked again at it.due, unless a newer event of
// its tag has been queued meanwhile (that one stands for it).
func (q *pushQueue) later(it *pushItem) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, newer := q.pending[it.ev.Tag]; newer {
		return
	}
	q.pending[it.ev.Tag] = it
	q.retry = append(q.retry, it)
}

// pushWorker indexes src's queued tags until the queue is empty.
func (ix *Indexer) pushWorker(ctx context.Context, src *source) {
	q := &src.push
	for {
		it, wait, done := q.next(time.Now())
		if done {
			return
		}
		if it == nil {
			select {
			case <-ctx.Done():
				q.mu.Lock()
				q.workers--
				q.pending, q.order, q.retry = nil, nil, nil
				q.mu.Unlock()
				return
			case <-q.wake:
			case <-time.After(wait):
			}
			continue
		}
		var st pushStats
		// A few look-ups at a time per registry, whichever of its sources
		// they are for (CONTRACT section 12).
		select {
		case src.pushSlots <- struct{}{}:
		case <-ctx.Done():
			continue // next sees ctx ended and leaves
		}
		outcome, err := ix.indexPushed(ctx, src, it, &st)
		<-src.pushSlots
		if errors.Is(err, errTryAgain) {
			q.later(it)
			continue
		}
		ev := it.ev
		ix.pushMetrics.tags.WithLabelValues(src.Name, outcome).Inc()
		log := ix.log.With("source", src.Name, "tag", ev.Tag, "outcome", outcome, "delete", ev.Delete,
			"since_event", time.Since(ev.Received), "queued", st.queued, "registry_requests", it.attempt,
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
}

// indexPushed confirms one tag with the registry and records what it said.
// errTryAgain: the registry does not have the tag yet; it.due says when to
// ask again.
func (ix *Indexer) indexPushed(ctx context.Context, src *source, it *pushItem, st *pushStats) (outcome string, err error) {
	ev := it.ev
	if !ev.Delete {
		// A signature pushed after its image (cosign's sha256-<hex>.sig,
		// usually excluded from the index) re-checks the versions it signs.
		if signed, err := ix.GateSignedDigest(ctx, src.Name, ev.Tag); signed {
			if err != nil {
				return "failed", err
			}
			ix.pushMetrics.latency.Observe(time.Since(ev.Received).Seconds())
			return "signature", nil
		}
	}
	if src.Exclude != nil && src.Exclude.MatchString(ev.Tag) {
		return "excluded", nil
	}
	t0 := time.Now()
	st.queued = t0.Sub(ev.Received)
	digest, err := ix.confirmOnce(ctx, src, it)
	if errors.Is(err, errTryAgain) {
		return "", err
	}
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
		t.Digest = resolver.ParseDigest(digest)
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

func pushStoreOf(opts Options) PushStore {
	if opts.PushStore != nil {
		return opts.PushStore
	}
	ps, _ := opts.Store.(PushStore)
	return ps
}
