package config

import (
	"net/netip"
	"time"

	"gopkg.in/yaml.v3"
)

// Fleet defaults (CONTRACT section 5).
const (
	DefaultRetention    = 30 * 24 * time.Hour
	DefaultActiveWindow = time.Hour
	// DefaultStuckAfter is fleet.stuck_after unset.
	DefaultStuckAfter = time.Hour
	// Admission (CONTRACT section 12): a cluster ID new to a channel is
	// recorded at most this many times a minute per client address, and
	// while the channel holds fewer than DefaultMaxClusters.
	DefaultNewClustersPerMinute = 60
	DefaultMaxClusters          = 100000
)

// Fleet is the top-level `fleet:` block.
type Fleet struct {
	Retention    time.Duration // records last seen longer ago are purged
	ActiveWindow time.Duration // a cluster seen within it is active
	// StuckAfter: a cluster told a version this long ago that still
	// reports an older one is stuck (evidence, docs/promotion.md).
	StuckAfter time.Duration
	// NewClustersPerMinute and MaxClusters bound what anonymous requests
	// may add to the fleet: per client address, per channel.
	NewClustersPerMinute int
	MaxClusters          int
	// EvidenceNetworks limits whose reports count as evidence: clients
	// whose address is in one of them. Empty: every client's.
	EvidenceNetworks []netip.Prefix
	// Enrollment is "" (off), EnrollmentOptional or EnrollmentRequired:
	// with it on, only clusters whose requests carry their key count as
	// evidence; required refuses a cluster ID without one.
	Enrollment string
}

// fleet.enrollment's values.
const (
	EnrollmentOptional = "optional"
	EnrollmentRequired = "required"
)

func (p *parser) fleet(n *yaml.Node) Fleet {
	out := Fleet{Retention: DefaultRetention, ActiveWindow: DefaultActiveWindow, StuckAfter: DefaultStuckAfter,
		NewClustersPerMinute: DefaultNewClustersPerMinute, MaxClusters: DefaultMaxClusters}
	if isNull(deref(n)) {
		return out
	}
	f := p.mapping(n, "", "fleet", []string{"retention", "active_window", "stuck_after", "new_clusters_per_minute", "max_clusters", "evidence_networks", "enrollment"})
	out.Enrollment = p.enrollment(f["enrollment"])
	out.EvidenceNetworks = p.prefixes(f["evidence_networks"], "fleet.evidence_networks")
	if i, ok := p.integer(f["new_clusters_per_minute"], "", "fleet.new_clusters_per_minute"); ok {
		if i < 1 {
			p.add(deref(f["new_clusters_per_minute"]), "", "fleet.new_clusters_per_minute: want 1 or more, got %d", i)
		} else {
			out.NewClustersPerMinute = i
		}
	}
	if i, ok := p.integer(f["max_clusters"], "", "fleet.max_clusters"); ok {
		if i < 1 {
			p.add(deref(f["max_clusters"]), "", "fleet.max_clusters: want 1 or more, got %d", i)
		} else {
			out.MaxClusters = i
		}
	}
	if d, ok := p.duration(f["retention"], "", "fleet.retention"); ok {
		if d <= 0 {
			p.add(deref(f["retention"]), "", "fleet.retention: want a positive duration like 30d, got %s", d)
		} else {
			out.Retention = d
		}
	}
	if d, ok := p.duration(f["active_window"], "", "fleet.active_window"); ok {
		if d <= 0 {
			p.add(deref(f["active_window"]), "", "fleet.active_window: want a positive duration like 1h, got %s", d)
		} else {
			out.ActiveWindow = d
		}
	}
	if d, ok := p.duration(f["stuck_after"], "", "fleet.stuck_after"); ok {
		if d <= 0 {
			p.add(deref(f["stuck_after"]), "", "fleet.stuck_after: want a positive duration like 1h, got %s", d)
		} else {
			out.StuckAfter = d
		}
	}
	if out.ActiveWindow > out.Retention {
		p.add(deref(n), "", "fleet: active_window %s is longer than retention %s; records would be purged while active", out.ActiveWindow, out.Retention)
	}
	return out
}

// enrollment reads fleet.enrollment: optional, required, or off (unset).
func (p *parser) enrollment(n *yaml.Node) string {
	if n == nil || isNull(deref(n)) {
		return ""
	}
	s, ok := p.str(n, "", "fleet.enrollment")
	if !ok {
		return ""
	}
	switch s {
	case EnrollmentOptional, EnrollmentRequired:
		return s
	case "off":
		return ""
	}
	p.add(deref(n), "", "fleet.enrollment: want optional, required or off, got %q%s", s, suggest(s, []string{EnrollmentOptional, EnrollmentRequired, "off"}))
	return ""
}
