package core

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

type metrics struct {
	requests       *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	lastSuccess    *prometheus.GaugeVec
	held           *prometheus.GaugeVec
	reloadFailures prometheus.Counter
	Webhooks       *prometheus.CounterVec
	heldAnswers    *prometheus.CounterVec // tidemark_answers_held_total
	risks          *prometheus.GaugeVec   // tidemark_risks
	capiPlans      *prometheus.CounterVec // tidemark_capi_upgrade_plans_total
	viewCache      *prometheus.CounterVec // tidemark_registry_view_manifest_cache_total
	viewUpstream   *prometheus.CounterVec // tidemark_registry_view_upstream_requests_total
	governed       *prometheus.CounterVec // tidemark_governance_events_total
	decisions      *prometheus.CounterVec // tidemark_decisions_total
	Handler        http.Handler
	bound          sync.Map // requestKey -> *bound (accesslog.go)
	// observed are the sources with per-source series (observeSnapshot).
	observed map[string]bool
}

func newMetrics(reg *prometheus.Registry, snapshotAge func() float64) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_http_requests_total",
			Help: "HTTP requests by route template, method and status code.",
		}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tidemark_http_request_duration_seconds",
			Help: "HTTP request latency by route template.",
			// Channel answers come from memory: most land well under a millisecond.
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"route"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidemark_source_last_success_timestamp_seconds",
			Help: "End of the newest successful scan per source, as seen in the served snapshot.",
		}, []string{"source"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tidemark_versions_held",
			Help: "Versions a release gate of their source holds back (not servable), per gate (platforms, signature, soak), in the served snapshot. A version held by two gates counts under each.",
		}, []string{"source", "gate"}),
		reloadFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tidemark_snapshot_reload_failures_total",
			Help: "Snapshot reloads that failed; the previous snapshot kept being served.",
		}),
		Webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tidemark_webhook_events_total",
			Help: "Tags named by registry webhooks by kind and outcome (queued, unknown_repository), and payloads by outcome (rejected, no_tag, unavailable, queue_full).",
		}, []string{"kind", "outcome"}),
	}
	m.heldAnswers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_answers_held_total",
		Help: "Cluster answers that held a cluster at its own version, by channel and reason (downgrade: the channel's answer was older than what it runs; risk: every version it could move to is behind a known risk for it).",
	}, []string{"channel", "reason"})
	m.risks = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "tidemark_risks",
		Help: "Known risks declared per source, in the served snapshot.",
	}, []string{"source"})
	m.capiPlans = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_capi_upgrade_plans_total",
		Help: "Cluster API GenerateUpgradePlan answers, by source and status (Success, Failure).",
	}, []string{"source", "status"})
	m.viewCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_registry_view_manifest_cache_total",
		Help: "Manifests the registry view asked its cache for by digest, by result (hit, miss).",
	}, []string{"result"})
	m.viewUpstream = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_registry_view_upstream_requests_total",
		Help: "Requests the registry view made to upstream registries, by kind (manifest, blob, tag).",
	}, []string{"kind"})
	for _, r := range []string{"hit", "miss"} {
		m.viewCache.WithLabelValues(r)
	}
	for _, k := range []string{"manifest", "blob", "tag"} {
		m.viewUpstream.WithLabelValues(k)
	}
	m.governed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_governance_events_total",
		Help: "Governance events by kind: requested, approved, rejected, cancelled, freeze (API); applied, failed, expired, held, released (the governor).",
	}, []string{"event"})
	for _, ev := range []string{"requested", "approved", "rejected", "cancelled", "freeze", "applied", "failed", "expired", "held", "released"} {
		m.governed.WithLabelValues(ev)
	}
	m.decisions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tidemark_decisions_total",
		Help: "The one decision's verdicts on changes, by door (api.pin, governor.apply, ...), outcome (allow, defer, pending, refuse) and the rule that decided (none, scope, override, freeze, window, approvals).",
	}, []string{"door", "outcome", "rule"})
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "tidemark_snapshot_age_seconds",
		Help: "Seconds since the served snapshot was loaded (0 before the first).",
	}, snapshotAge)
	for _, c := range []prometheus.Collector{m.requests, m.latency, m.lastSuccess, m.held, m.reloadFailures, m.Webhooks, m.heldAnswers, m.risks, m.capiPlans, m.viewCache, m.viewUpstream, m.governed, m.decisions, age} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register server metrics: %w", err)
		}
	}
	m.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return m, nil
}

// observeSnapshot sets the per-source gauges from snap. A source whose
// index snap shares with prev (snapshot.Snapshot.SameSourceAt) keeps its
// series as they are, so a reload after one source changed touches that
// source's series only. Callers serialise it (swap, under reloadMu).
func (m *metrics) observeSnapshot(prev, snap *snapshot.Snapshot) {
	if m.observed == nil {
		m.observed = map[string]bool{}
	}
	for i := range snap.NumSources() {
		name := snap.SourceNameAt(i)
		if m.observed[name] && snap.SameSourceAt(prev, i) {
			continue
		}
		m.observed[name] = true
		sv := snap.SourceAt(i)
		m.lastSuccess.DeleteLabelValues(name)
		m.held.DeletePartialMatch(prometheus.Labels{"source": name})
		risks, _ := snap.Risks(name)
		m.risks.WithLabelValues(name).Set(float64(len(risks)))
		if sv.LastOK != nil && !sv.LastOK.Finished.IsZero() {
			m.lastSuccess.WithLabelValues(name).Set(float64(sv.LastOK.Finished.UnixNano()) / 1e9)
		}
		if g := sv.Source.Gates; g.Enabled() {
			// Every configured gate has a series, 0 included, so that an
			// alert on a gate holding versions has something to read.
			for gate, on := range map[string]bool{"platforms": len(g.Platforms) > 0, "signature": g.SignatureKeyFile != "", "soak": g.Soak > 0} {
				if on {
					m.held.WithLabelValues(name, gate).Set(float64(sv.HeldBy[gate]))
				}
			}
		}
	}
	// observed now holds snap's names and those of sources gone from the
	// configuration, which lose their series; there are some only when it
	// holds more names than snap has sources (a whole reload after a
	// configuration change).
	if len(m.observed) == snap.NumSources() {
		return
	}
	in := make(map[string]bool, snap.NumSources())
	for i := range snap.NumSources() {
		in[snap.SourceNameAt(i)] = true
	}
	for name := range m.observed {
		if !in[name] {
			m.lastSuccess.DeleteLabelValues(name)
			m.held.DeletePartialMatch(prometheus.Labels{"source": name})
			m.risks.DeleteLabelValues(name)
			delete(m.observed, name)
		}
	}
}

// methodLabel bounds the method label: the method is whatever the client
// sent, and each new value would be a new series kept for the process's life.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost,
		http.MethodDelete, http.MethodPatch, http.MethodOptions:
		return m
	}
	return "other"
}

// statusText avoids an allocation per request for the common codes.
func statusText(code int) string {
	switch code {
	case 200:
		return "200"
	case 302:
		return "302"
	case 304:
		return "304"
	case 404:
		return "404"
	}
	return strconv.Itoa(code)
}

// RegistryView counts a registry view event (registryview.Options.Observe).
func (m *metrics) RegistryView(kind, value string) {
	switch kind {
	case "cache":
		m.viewCache.WithLabelValues(value).Inc()
	case "upstream":
		m.viewUpstream.WithLabelValues(value).Inc()
	}
}

// Governance counts a governance event (a fixed set of names).
func (m *metrics) Governance(event string) { m.governed.WithLabelValues(event).Inc() }

// Decision counts a verdict of the one decision.
func (m *metrics) Decision(d door.Door, v door.Verdict) {
	m.decisions.WithLabelValues(string(d), string(v.Outcome), cmp.Or(v.Rule, "none")).Inc()
}

// CapiAnswer counts a GenerateUpgradePlan answer; sources are configured.
func (m *metrics) CapiAnswer(source, status string) {
	m.capiPlans.WithLabelValues(source, status).Inc()
}

// HeldAnswer counts an answer that held a cluster where it is. Channels are
// configured, so the series are bounded by the configuration.
func (m *metrics) HeldAnswer(channel, reason string) {
	m.heldAnswers.WithLabelValues(channel, reason).Inc()
}
