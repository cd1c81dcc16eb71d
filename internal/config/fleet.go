package config

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Fleet defaults (CONTRACT section 5).
const (
	DefaultRetention    = 30 * 24 * time.Hour
	DefaultActiveWindow = time.Hour
)

// Fleet is the top-level `fleet:` block.
type Fleet struct {
	Retention    time.Duration // records last seen longer ago are purged
	ActiveWindow time.Duration // a cluster seen within it is active
}

func (p *parser) fleet(n *yaml.Node) Fleet {
	out := Fleet{Retention: DefaultRetention, ActiveWindow: DefaultActiveWindow}
	if isNull(deref(n)) {
		return out
	}
	f := p.mapping(n, "", "fleet", []string{"retention", "active_window"})
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
	if out.ActiveWindow > out.Retention {
		p.add(deref(n), "", "fleet: active_window %s is longer than retention %s; records would be purged while active", out.ActiveWindow, out.Retention)
	}
	return out
}
