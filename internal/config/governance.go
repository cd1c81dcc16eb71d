package config

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// DefaultApprovalTTL is how long a pending change waits for approvals when
// its channel sets no approval_ttl.
const DefaultApprovalTTL = 24 * time.Hour

var windowKeys = []string{"days", "start", "end", "timezone"}

// maxApprovals bounds a channel's approvals: more people than a team.
const maxApprovals = 10

// governance reads a channel's approvals, approval_ttl and windows
// (CONTRACT section 15). A window whose start equals its end, an unknown
// day or time zone is a problem naming the channel; so are two windows
// of one channel that overlap.
func (p *parser) governance(f map[string]*yaml.Node, item string, c *catalog.Channel) {
	if n, ok := p.integer(f["approvals"], item, "approvals"); ok {
		if n < 0 || n > maxApprovals {
			p.add(deref(f["approvals"]), item, "approvals: want 0 to %d, got %d", maxApprovals, n)
		} else {
			c.Approvals = n
		}
	}
	if d, ok := p.duration(f["approval_ttl"], item, "approval_ttl"); ok {
		switch {
		case d <= 0:
			p.add(deref(f["approval_ttl"]), item, "approval_ttl: want a duration above zero like 24h, got %s", d)
		case c.Approvals == 0:
			p.add(deref(f["approval_ttl"]), item, "approval_ttl: only a channel with approvals has one")
		default:
			c.ApprovalTTL = d
		}
	}
	for i, el := range p.list(f["windows"], item, "windows") {
		wf := p.mapping(el, item, "windows", windowKeys)
		at := deref(el)
		var w resolver.Window
		ok := true
		var days []string
		for _, d := range p.list(wf["days"], item, "windows: days") {
			if s, sok := p.str(d, item, "windows: days"); sok {
				days = append(days, s)
			}
		}
		var err error
		if w.Days, err = resolver.ParseDays(days); err != nil {
			p.add(at, item, "windows[%d]: days: %v", i, err)
			ok = false
		}
		for _, k := range []struct {
			key string
			dst *int
		}{{"start", &w.Start}, {"end", &w.End}} {
			s, sok := p.str(wf[k.key], item, "windows: "+k.key)
			if !sok {
				p.add(at, item, "windows[%d]: %s: missing (a time of day like 09:00)", i, k.key)
				ok = false
				continue
			}
			if *k.dst, err = resolver.ParseClock(s); err != nil {
				p.add(deref(wf[k.key]), item, "windows[%d]: %s: %v", i, k.key, err)
				ok = false
			}
		}
		if ok && w.Start == w.End {
			p.add(deref(wf["end"]), item, "windows[%d]: start and end are both %s: the window is empty", i, clock(w.Start))
			ok = false
		}
		tz, _ := p.str(wf["timezone"], item, "windows: timezone")
		if tz == "" {
			tz = "UTC"
		}
		if w.Location, err = time.LoadLocation(tz); err != nil {
			p.add(deref(wf["timezone"]), item, "windows[%d]: timezone: unknown time zone %q (an IANA name like Europe/Berlin)", i, tz)
			ok = false
		}
		if !ok {
			continue
		}
		for j := range c.Windows {
			if overlap(&c.Windows[j], &w) {
				p.add(at, item, "windows[%d] overlaps windows[%d]", i, j)
				ok = false
				break
			}
		}
		if ok {
			c.Windows = append(c.Windows, w)
		}
	}
}

func clock(m int) string { return time.Date(0, 1, 1, m/60, m%60, 0, 0, time.UTC).Format("15:04") }

// overlap reports whether two windows are ever open at once, minute by
// minute over a week (and a day more, for time zones and past-midnight
// windows), starting from a fixed Monday.
func overlap(a, b *resolver.Window) bool {
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for t := start; t.Before(start.Add(8 * 24 * time.Hour)); t = t.Add(time.Minute) {
		if a.Open(t) && b.Open(t) {
			return true
		}
	}
	return false
}
