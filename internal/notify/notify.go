// Package notify delivers outbound notifications: CloudEvents 1.0 JSON (or
// a Slack message) POSTed to each configured endpoint, at least once, from
// the outbox in Postgres. Events are written by the store in the
// transaction of the change they report (pins, unpins, blocks) or, for a
// served version moved by indexing, by the indexing replica when its
// snapshot changes (SnapshotChanged).
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/metric"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// Endpoint is one configured receiver.
type Endpoint struct {
	Name string
	URL  string
	Kind string // "webhook" (CloudEvents) or "slack"
	// Secret reads the signing key per delivery (a rotated file applies at
	// once); nil: bodies are not signed.
	Secret func() ([]byte, error)
	// Channels limits the endpoint to these channels' events and the
	// blocks of their sources; empty: every event.
	Channels []string
}

// Store is what delivery needs of *store.Store.
type Store interface {
	AddEvents(ctx context.Context, events []resolver.Event) error
	StartCursor(ctx context.Context, endpoint string) error
	DeliverNext(ctx context.Context, endpoint string, f resolver.EventFilter,
		send func(context.Context, resolver.Event) error, backoff func(int) time.Duration) (resolver.Delivery, bool, error)
	Backlog(ctx context.Context, endpoint string, f resolver.EventFilter) (int, error)
	RecentEvents(ctx context.Context, limit int) ([]resolver.Event, []resolver.NotifyCursor, error)
	// LastServed is the "to" of each channel's newest channel.changed event.
	LastServed(ctx context.Context) (map[string]string, error)
}

// Options configure a Deliverer.
type Options struct {
	Endpoints []Endpoint
	Store     Store
	// ChannelSources maps each configured channel to its source, so that
	// an endpoint limited to channels also gets the blocks of their sources.
	ChannelSources map[string]string
	// Source is the CloudEvents "source" attribute: the service's external
	// URL, or "tidemark".
	Source  string
	Log     *slog.Logger
	Metrics prometheus.Registerer
	Client  *http.Client // nil: NewClient(10s); one given must not follow redirects
	// Leading reports whether this replica indexes: only then does
	// SnapshotChanged record events (else every replica would).
	Leading func() bool
	// Poll is how often each endpoint's cursor is looked at besides Kick;
	// 0: 1s. BackoffMin and BackoffMax bound the wait after a failed
	// delivery, doubling per attempt; 0: 1s and 5m.
	Poll, BackoffMin, BackoffMax time.Duration
}

// Deliverer sends the outbox to the endpoints.
type Deliverer struct {
	opts    Options
	log     *slog.Logger
	filters map[string]resolver.EventFilter
	kick    chan struct{}
	// derived carries, in swap order, the events each snapshot swap
	// derived and the first snapshot after this replica became the
	// indexing leader (compared with the outbox). One queue: two let the
	// writer take a later swap's events before an earlier reconcile, which
	// then compared its older snapshot with them and recorded a false move
	// (a version "gone from the registry" that was served).
	derived chan derivedWork
	led     atomic.Bool // whether this replica led at the last snapshot
	lines   lineCounter
	backlog *prometheus.GaugeVec
	sent    *prometheus.CounterVec
	mu      sync.Mutex
	wakeups []chan struct{}
}

// New checks the endpoints and registers metrics.
func New(opts Options) (*Deliverer, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: notify needs a store", resolver.ErrInvalid)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Client == nil {
		opts.Client = NewClient(10 * time.Second)
	}
	if opts.Source == "" {
		opts.Source = "tidemark"
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = time.Second
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = 5 * time.Minute
	}
	d := &Deliverer{opts: opts, log: opts.Log, filters: map[string]resolver.EventFilter{},
		kick: make(chan struct{}, 1), derived: make(chan derivedWork, 64)}
	for _, e := range opts.Endpoints {
		if _, dup := d.filters[e.Name]; dup {
			return nil, fmt.Errorf("%w: notify endpoint %q listed twice", resolver.ErrInvalid, e.Name)
		}
		if e.Kind != "webhook" && e.Kind != "slack" {
			return nil, fmt.Errorf("%w: notify endpoint %q: kind %q: want webhook or slack", resolver.ErrInvalid, e.Name, e.Kind)
		}
		var f resolver.EventFilter
		if len(e.Channels) > 0 {
			f.Channels = append([]string{}, e.Channels...)
			f.Sources = []string{}
			for _, c := range e.Channels {
				if src, ok := opts.ChannelSources[c]; ok {
					f.Sources = append(f.Sources, src)
				}
			}
		}
		d.filters[e.Name] = f
	}
	d.backlog = metric.GaugeVec("tidemark_notify_backlog", "Outbox events an endpoint wants and has not been sent.", "endpoint")
	d.sent = metric.CounterVec("tidemark_notify_deliveries_total", "Delivery attempts by endpoint and outcome (delivered, failed).", "endpoint", "outcome")
	// Every endpoint's series exist from the start, at 0, so that rules
	// and dashboards see a quiet endpoint, not a missing one.
	for _, e := range opts.Endpoints {
		d.backlog.WithLabelValues(e.Name)
		d.sent.WithLabelValues(e.Name, "delivered")
		d.sent.WithLabelValues(e.Name, "failed")
	}
	if err := metric.Register(opts.Metrics, "notify", d.backlog, d.sent); err != nil {
		return nil, err
	}
	return d, nil
}

// Kick wakes every endpoint's loop now (an event was just written here).
func (d *Deliverer) Kick() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.wakeups {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// Run delivers until ctx ends: one loop per endpoint, so that a receiver
// that is down delays only its own events; and one writer of the events
// SnapshotChanged derives.
//
// Every endpoint's cursor exists before the writer starts. A new cursor
// starts at the newest event (a new endpoint is sent what happens from now
// on), so a cursor made after the writer recorded the start-up scan's moves
// would have skipped them: a lost notification, seen once in ~40 runs of
// TestPushIsServedWithoutAScan. Until the cursors exist the writer waits,
// and the moves wait in its queue. (serve calls StartCursors before it
// serves, so that the API's pins are not early either.)
func (d *Deliverer) Run(ctx context.Context) {
	_ = d.StartCursors(ctx) // nil, or ctx ended

	var wg sync.WaitGroup
	wg.Go(func() { d.writeDerived(ctx) })
	for _, e := range d.opts.Endpoints {
		wake := make(chan struct{}, 1)
		d.mu.Lock()
		d.wakeups = append(d.wakeups, wake)
		d.mu.Unlock()
		wg.Go(func() { d.endpointLoop(ctx, e, wake) })
	}
	wg.Wait()
}

// StartCursors makes every endpoint's cursor, retrying each until it is
// made or ctx ends (then it returns ctx's error). A new endpoint is sent
// the events written after its cursor is made: call this before anything
// that writes events runs (the API, the indexer, the rollout loops).
// Cursors that exist are left alone.
func (d *Deliverer) StartCursors(ctx context.Context) error {
	for _, e := range d.opts.Endpoints {
		for {
			err := d.opts.Store.StartCursor(ctx, e.Name)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == nil {
				break
			}
			d.log.WarnContext(ctx, "notification cursor unavailable; retrying", "endpoint", e.Name, "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(d.opts.Poll):
			}
		}
	}
	return nil
}

func (d *Deliverer) endpointLoop(ctx context.Context, e Endpoint, wake <-chan struct{}) {
	log := d.log.With("endpoint", e.Name)
	f := d.filters[e.Name]
	for {
		for ctx.Err() == nil {
			del, ok, err := d.opts.Store.DeliverNext(ctx, e.Name, f, func(ctx context.Context, ev resolver.Event) error {
				return d.send(ctx, e, ev)
			}, d.backoff)
			if err != nil {
				if ctx.Err() == nil {
					log.WarnContext(ctx, "delivering notifications", "err", err)
				}
				break
			}
			if !ok {
				break
			}
			if del.Err != nil {
				d.sent.WithLabelValues(e.Name, "failed").Inc()
				log.WarnContext(ctx, "notification not delivered; retrying", "event", del.Event.ID,
					"attempts", del.Attempts, "retry_in", del.Retry, "err", del.Err)
				break
			}
			d.sent.WithLabelValues(e.Name, "delivered").Inc()
			log.InfoContext(ctx, "notification delivered", "event", del.Event.ID, "type", del.Event.Type, "attempts", del.Attempts)
		}
		if n, err := d.opts.Store.Backlog(ctx, e.Name, f); err == nil {
			d.backlog.WithLabelValues(e.Name).Set(float64(n))
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-time.After(d.opts.Poll):
		}
	}
}

// backoff doubles from BackoffMin per failed attempt, up to BackoffMax.
func (d *Deliverer) backoff(attempts int) time.Duration {
	w := d.opts.BackoffMin
	for i := 1; i < attempts && w < d.opts.BackoffMax; i++ {
		w *= 2
	}
	return min(w, d.opts.BackoffMax)
}

// SnapshotChanged records, on the indexing replica, a channel.changed event
// for every channel whose served version moved between prev and next for a
// reason other than a pin or unpin (those record their own): a new version
// indexed, a version deleted, blocked or unblocked. It never blocks the
// caller (the snapshot swap): the events are written by Run.
//
// The first snapshot after this replica became the leader is compared with
// what the outbox last recorded instead of with prev: a move made while no
// replica led (a push indexed before the start-up lock was taken, or
// during a change of leader) would otherwise never be announced.
func (d *Deliverer) SnapshotChanged(prev, next *snapshot.Snapshot) {
	leading := d.opts.Leading != nil && d.opts.Leading()
	if first := leading && !d.led.Swap(leading); first {
		select {
		case d.derived <- derivedWork{reconcile: next}:
		default:
			// The writer is behind: the next swap tries again.
			d.led.Store(false)
			d.log.Warn("notification events since the last leader not compared yet: the outbox writer is behind")
		}
		return
	}
	if !leading {
		return
	}
	evs := servedChanges(prev, next)
	for i := range evs {
		evs[i].Actor, evs[i].Reason = "tidemark", why(next, evs[i])
	}
	evs = append(evs, lineEvents(prev, next)...) // lines.go
	if len(evs) == 0 {
		return
	}
	select {
	case d.derived <- derivedWork{evs: evs}:
	default:
		d.log.Warn("notification events dropped: the outbox writer is behind", "events", len(evs))
	}
}

func why(next *snapshot.Snapshot, e resolver.Event) string {
	if e.From != "" {
		if v, err := next.Version(e.Source, e.From); err == nil && v.Blocked {
			return "version " + e.From + " was blocked"
		}
		if _, err := next.Version(e.Source, e.From); errors.Is(err, resolver.ErrNotFound) {
			return "version " + e.From + " is gone from the registry"
		}
	}
	if e.To != "" {
		return "version " + e.To + " is the newest eligible"
	}
	return "no version is eligible"
}

// derivedWork is one item of Deliverer.derived: a swap's events, or the
// first snapshot as leader to compare with what the outbox last recorded.
type derivedWork struct {
	evs       []resolver.Event
	reconcile *snapshot.Snapshot
}

func (d *Deliverer) writeDerived(ctx context.Context) {
	for {
		var w derivedWork
		select {
		case <-ctx.Done():
			return
		case w = <-d.derived:
		}
		if snap := w.reconcile; snap != nil {
			recorded, err := d.opts.Store.LastServed(ctx)
			if err != nil {
				if ctx.Err() == nil {
					d.log.Error("notification events since the last leader not compared", "err", err)
				}
				continue
			}
			evs := servedSince(recorded, snap)
			for i := range evs {
				evs[i].Actor, evs[i].Reason = "tidemark", why(snap, evs[i])
			}
			if len(evs) > 0 {
				if err := d.opts.Store.AddEvents(ctx, evs); err != nil {
					d.log.Error("notification events not recorded", "events", len(evs), "err", err)
				} else {
					d.Kick()
				}
			}
			continue
		}
		if evs := w.evs; len(evs) > 0 {
			d.countLines(ctx, evs)
			for attempt := 1; ; attempt++ {
				err := d.opts.Store.AddEvents(ctx, evs)
				if err == nil {
					d.Kick()
					break
				}
				if ctx.Err() != nil || attempt == 5 {
					d.log.Error("notification events not recorded", "events", len(evs), "err", err)
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(attempt) * time.Second):
				}
			}
		}
	}
}
