// Package fleet records the clusters that ask channel URLs (CONTRACT
// section 5) off the request path: a request hands a sighting to a
// bounded queue and never waits; one goroutine coalesces and writes them
// in batches; maintenance purges, counts and learns who is known.
package fleet

import (
	"context"
	"hash/maphash"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Store keeps the fleet (*store.Store).
type Store interface {
	// RecordFleet writes sightings, which it must not keep past its
	// return (the recorder reuses the slice).
	RecordFleet(ctx context.Context, sightings []resolver.Sighting) ([]resolver.ClusterRecord, error)
	FleetSummary(ctx context.Context, channel string, activeSince time.Time) (resolver.FleetSummary, error)
	FleetClusters(ctx context.Context, q resolver.ClusterQuery) ([]resolver.ClusterRecord, string, error)
	FleetCluster(ctx context.Context, id string) ([]resolver.ClusterRecord, error)
	FleetActive(ctx context.Context, activeSince time.Time) (map[string][]resolver.VersionCount, error)
	FleetCounts(ctx context.Context, activeSince time.Time) (map[string]resolver.FleetCount, error)
	PurgeFleet(ctx context.Context, cutoff time.Time) (int64, error)
	// FleetMembers calls fn with every recorded (channel, cluster).
	FleetMembers(ctx context.Context, fn func(channel, cluster string)) error
}

// Options configure fleet recording (CONTRACT section 5).
type Options struct {
	// Store keeps the records. nil: nothing is recorded and the fleet
	// routes answer 503; stepwise channels still answer, settling on this
	// replica's own clock.
	Store Store
	// Retention is how long a record outlives its last sighting. 0: 30 days.
	Retention time.Duration
	// ActiveWindow: a cluster seen within it is active. 0: 1h.
	ActiveWindow time.Duration
	// StuckAfter: a cluster told a version this long ago that still
	// reports an older one is stuck, in evidence. 0: 1h.
	StuckAfter time.Duration
	// Buffer is how many sightings may wait for the flusher; beyond it they
	// are dropped and counted. 0: 65536.
	Buffer int
	// FlushEvery is the flusher's period. 0: 1s (a replica's records reach
	// the others well within the contract's 5 s).
	FlushEvery time.Duration
	// NewClustersPerMinute and MaxClusters are the admission limits
	// (admission.go). 0: the config package's defaults.
	NewClustersPerMinute int
	MaxClusters          int
	// EvidenceNetworks: only reports from clients in them count as
	// evidence (fleet.evidence_networks). Empty: every client's.
	EvidenceNetworks []netip.Prefix
}

const (
	defaultFleetBuffer = 1 << 16
	defaultFlushEvery  = time.Second
	// maxPending bounds the sightings coalesced between two flushes: one
	// per (channel, cluster), so a fleet this large seen within one second.
	maxPending    = 1 << 17
	fleetPurgeGap = 10 * time.Minute
	fleetGaugeGap = 30 * time.Second // at most; active_window/2 when shorter
	// servedGap is how often the versions served to active clusters are
	// read again (a few rows of fleet_served): with the recorder's flush,
	// a served set follows the fleet records within 5 s.
	servedGap     = 2 * time.Second
	fleetWriteMax = 5 * time.Second // one flush's deadline
)

// Recorder takes sightings off the request path: a request appends to a
// bounded queue and never waits (a full queue drops and counts; see
// queue.go); one goroutine takes the queue every 50 ms, coalesces the
// sightings per (channel, cluster) and writes a batch every FlushEvery. While the database is down a flush fails after its deadline,
// its batch is dropped and counted, and the buffer fills and drops too, so
// memory stays bounded and no request notices.
type Recorder struct {
	opts  Options
	in    *sightingQueue
	seed  maphash.Seed // of the queued sightings' cluster hashes
	admit *admission
	// indexed says whether version is one channel's source indexes: only
	// those are a tidemark_fleet_clusters label, the rest count as "other".
	indexed  func(channel, version string) bool
	dropped  *prometheus.CounterVec
	written  prometheus.Counter
	flushDur prometheus.Histogram
	clusters *prometheus.GaugeVec
	// settle is each (channel, cluster)'s reported version and since when,
	// for stepwise channels' settle: kept in memory because a request may
	// not touch the database (see since).
	settle *clocks
	// last is what this replica last answered each cluster (answered.go).
	last *answered
	// served is, per channel, the versions answered to active clusters
	// (any replica's), refreshed with the gauge; nil until the first.
	served   atomic.Pointer[activeServed]
	onServed atomic.Pointer[func()] // called when a refresh changed some channel's list
}

func New(opts Options, reg *prometheus.Registry, indexed func(channel, version string) bool) (*Recorder, error) {
	if opts.Retention <= 0 {
		opts.Retention = config.DefaultRetention
	}
	if opts.ActiveWindow <= 0 {
		opts.ActiveWindow = config.DefaultActiveWindow
	}
	if opts.Buffer <= 0 {
		opts.Buffer = defaultFleetBuffer
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = defaultFlushEvery
	}
	if opts.NewClustersPerMinute <= 0 {
		opts.NewClustersPerMinute = config.DefaultNewClustersPerMinute
	}
	if opts.MaxClusters <= 0 {
		opts.MaxClusters = config.DefaultMaxClusters
	}
	r := &Recorder{
		opts:    opts,
		in:      &sightingQueue{max: opts.Buffer},
		seed:    maphash.MakeSeed(),
		admit:   newAdmission(opts.NewClustersPerMinute, opts.MaxClusters),
		indexed: indexed,
		settle:  newClocks(),
		last:    newAnswered(),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_fleet_dropped_total",
			Help: "Cluster sightings not recorded, by reason: rate and cap (admission limits), buffer (the queue was full), database (it did not take them).",
		}, []string{"reason"}),
		written: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_fleet_records_written_total",
			Help: "Fleet records written (one per channel and cluster per flush).",
		}),
		flushDur: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tidemark_fleet_flush_duration_seconds",
			Help:    "Time to write one batch of fleet records.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		// Labels are channel and version only: cluster IDs are customer
		// data and never a label.
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidemark_fleet_clusters",
			Help: "Active clusters (seen within fleet.active_window) by channel and reported version.",
		}, []string{"channel", "version"}),
	}
	for _, reason := range []string{dropRate, dropCap, dropBuffer, dropDatabase} {
		r.dropped.WithLabelValues(reason) // present at 0, for rules and dashboards
	}
	for _, c := range []prometheus.Collector{r.dropped, r.written, r.flushDur, r.clusters} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

const (
	dropBuffer   = "buffer"
	dropDatabase = "database"
)

// Admitted says whether a sighting of cluster on channel from addr may be
// kept (in the database and in the settle clocks); a refused one is
// counted by reason.
func (r *Recorder) Admitted(channel, cluster, addr string, now time.Time) bool {
	ok, reason := r.admit.admit(channel, cluster, addr, now)
	if !ok {
		r.dropped.WithLabelValues(reason).Inc()
	}
	return ok
}

// Counts says whether a report from the client at addr counts as evidence:
// it is in fleet.evidence_networks, or none are set.
func (r *Recorder) Counts(addr string) bool {
	if len(r.opts.EvidenceNetworks) == 0 {
		return true
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range r.opts.EvidenceNetworks {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Record queues s; it never blocks.
func (r *Recorder) Record(s resolver.Sighting) {
	if r.opts.Store == nil {
		return
	}
	if !r.in.put(queued{s, maphash.String(r.seed, s.Cluster)}) {
		r.dropped.WithLabelValues(dropBuffer).Inc()
	}
}

// Since is when cluster began reporting reported on channel: this
// replica's clock when it has one, else the database's reported_since (read
// once, when the clock is made: a cluster new to this replica, or back
// after the sweep forgot it, as an edge node back from a long absence is),
// else now. A flush's answer corrects it later (adopt). Before either, it
// is this replica's own first sighting: a lower bound on how long the
// cluster has run its version, so settle can only hold a cluster longer
// than the fleet says, never move it early.
func (r *Recorder) Since(ctx context.Context, channel, cluster, reported string, now time.Time) time.Time {
	key := r.settle.key(channel, cluster)
	if st := r.settle.load(key); st != nil && st.reported == reported {
		st.seen.Store(now.UnixNano())
		return time.Unix(0, st.since.Load())
	}
	since := now
	if db, ok := r.recordedSince(ctx, channel, cluster, reported); ok && db.Before(now) {
		since = db
	}
	st := &settling{reported: reported}
	st.since.Store(since.UnixNano())
	st.seen.Store(now.UnixNano())
	r.settle.store(key, st)
	return since
}

// settleReadMax bounds the one database read a new settle clock makes: a
// slow or absent database holds the cluster (its clock starts now) rather
// than delaying its answer.
const settleReadMax = 100 * time.Millisecond

// recordedSince is the database's reported_since of cluster on channel,
// when the record reports the same version. Admission bounds how often it
// runs: once per admitted cluster per replica, until the sweep.
func (r *Recorder) recordedSince(ctx context.Context, channel, cluster, reported string) (time.Time, bool) {
	if r.opts.Store == nil {
		return time.Time{}, false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleReadMax)
	defer cancel()
	recs, err := r.opts.Store.FleetCluster(ctx, cluster)
	if err != nil {
		return time.Time{}, false
	}
	for _, c := range recs {
		if c.Channel == channel && c.Reported == reported && !c.ReportedSince.IsZero() {
			return c.ReportedSince, true
		}
	}
	return time.Time{}, false
}

// adopt takes the database's reported_since for the settle clocks.
func (r *Recorder) adopt(recs []resolver.ClusterRecord) {
	for _, c := range recs {
		if c.ReportedSince.IsZero() {
			continue
		}
		st := r.settle.load(r.settle.key(c.Channel, c.ID))
		if st == nil || st.reported != c.Reported {
			continue
		}
		if db := c.ReportedSince.UnixNano(); db < st.since.Load() {
			st.since.Store(db)
		}
	}
}

// sweep forgets settle clocks of clusters not seen within the active
// window; one that comes back reads its clock from the database (Since).
func (r *Recorder) sweep(now time.Time) {
	cutoff := now.Add(-r.opts.ActiveWindow).UnixNano()
	r.settle.sweep(cutoff)
	r.last.sweep(cutoff)
}

// LastAnswered is the version this replica last answered cluster on
// channel within the active window (kept in memory: no database read).
// A request that names its cluster and reports no version is treated as
// running it.
func (r *Recorder) LastAnswered(channel, cluster string) (string, bool) {
	return r.last.get(channel, cluster)
}

type fleetKey struct{ channel, cluster string }

// Run flushes every FlushEvery until ctx ends, then drains what is queued
// and flushes once more. A flush under way when ctx ends is not cut short:
// each write has its own deadline (fleetWriteMax), so stopping waits for
// at most two.
func (r *Recorder) Run(ctx context.Context, log func(msg string, args ...any)) {
	flush := time.NewTicker(r.opts.FlushEvery)
	defer flush.Stop()
	drain := time.NewTicker(drainEvery)
	defer drain.Stop()
	pending := newPending()
	var spare []queued
	take := func() {
		got := r.in.take(spare)
		for _, s := range got {
			if s.Served != "" {
				r.last.put(s.Channel, s.Cluster, s.Served, s.At.UnixNano())
			}
			if !pending.merge(s) {
				r.dropped.WithLabelValues(dropBuffer).Inc()
			}
		}
		spare = got
	}
	for {
		select {
		case <-drain.C:
			take()
		case <-flush.C:
			take()
			// Not cancelled by the shutdown: a write under way when ctx
			// ends finishes within fleetWriteMax, or its batch is lost.
			r.flush(context.WithoutCancel(ctx), pending.batch(), log)
			pending.reset()
		case <-ctx.Done():
			take()
			r.flush(context.WithoutCancel(ctx), pending.batch(), log)
			return
		}
	}
}

func (r *Recorder) flush(ctx context.Context, batch []resolver.Sighting, log func(msg string, args ...any)) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, fleetWriteMax)
	defer cancel()
	start := time.Now()
	recs, err := r.opts.Store.RecordFleet(ctx, batch)
	r.flushDur.Observe(time.Since(start).Seconds())
	r.written.Add(float64(len(recs)))
	r.adopt(recs)
	if err != nil {
		r.dropped.WithLabelValues(dropDatabase).Add(float64(len(batch) - len(recs)))
		log("fleet records dropped: the database did not take them", "records", len(batch)-len(recs), "err", err)
	}
}

// Maintain purges records past retention, refreshes the active-clusters
// gauge and sweeps settle clocks, until ctx ends.
func (r *Recorder) Maintain(ctx context.Context, log func(msg string, args ...any)) {
	// The gauge is refreshed at least twice per active window, so a short
	// window (20 s) is not outlived by its own gauge.
	gauge := time.NewTicker(min(fleetGaugeGap, r.opts.ActiveWindow/2))
	defer gauge.Stop()
	served := time.NewTicker(servedGap)
	defer served.Stop()
	purge := time.NewTicker(fleetPurgeGap)
	defer purge.Stop()
	r.learn(ctx, log)
	r.refreshGauge(ctx, log)
	for {
		select {
		case <-ctx.Done():
			return
		case <-served.C:
			r.refreshServed(ctx, log)
		case <-gauge.C:
			r.refreshGauge(ctx, log)
			r.sweep(time.Now())
		case <-purge.C:
			n, err := r.opts.Store.PurgeFleet(ctx, time.Now().Add(-r.opts.Retention))
			if err != nil && ctx.Err() == nil {
				log("fleet purge failed", "err", err)
			} else if n > 0 {
				log("fleet records purged", "records", n, "retention", r.opts.Retention)
				r.learn(ctx, log)
			}
		}
	}
}

func (r *Recorder) refreshGauge(ctx context.Context, log func(msg string, args ...any)) {
	r.refreshServed(ctx, log)
	active, err := r.opts.Store.FleetActive(ctx, time.Now().Add(-r.opts.ActiveWindow))
	if err != nil {
		if ctx.Err() == nil {
			log("counting active clusters failed", "err", err)
		}
		return
	}
	if counts, err := r.opts.Store.FleetCounts(ctx, time.Now().Add(-r.opts.ActiveWindow)); err == nil {
		total := make(map[string]int, len(counts))
		for ch, c := range counts {
			total[ch] = c.Clusters
		}
		r.admit.counted(total)
	}
	// Reported versions no source indexes are one series, "other": a
	// client cannot add series by reporting made-up versions.
	type key struct{ channel, version string }
	sum := map[key]int{}
	for ch, counts := range active {
		for _, c := range counts {
			v := c.Version
			if v != "" && (r.indexed == nil || !r.indexed(ch, v)) {
				v = "other"
			}
			sum[key{ch, v}] += c.Clusters
		}
	}
	r.clusters.Reset()
	for k, n := range sum {
		r.clusters.WithLabelValues(k.channel, k.version).Set(float64(n))
	}
}

// learn marks the clusters already recorded as known to admission.
func (r *Recorder) learn(ctx context.Context, log func(msg string, args ...any)) {
	members := map[string][]string{}
	err := r.opts.Store.FleetMembers(ctx, func(channel, cluster string) {
		if len(members[channel]) < r.opts.MaxClusters {
			members[channel] = append(members[channel], cluster)
		}
	})
	if err != nil {
		if ctx.Err() == nil {
			log("reading the recorded clusters failed; they are admitted as new", "err", err)
		}
		return
	}
	r.admit.learn(members)
}

// ActiveWindow is how recently a cluster must have been seen to count as
// active.
func (r *Recorder) ActiveWindow() time.Duration { return r.opts.ActiveWindow }
