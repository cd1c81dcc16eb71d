// Package evidence turns what a channel's clusters report into figures
// per version (told, adopted, stuck, halts) and decides from them whether
// a channel may be promoted to a version. Pure: the fleet's records come
// in as grouped rows.
package evidence

import (
	"fmt"
	"sort"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// Days bounds the versions a channel's evidence lists: those it told a
// cluster in the last 30 days.
const Days = 30 * 24 * time.Hour

// Version is one version's evidence on one channel.
type Version = resolver.Evidence

// Compute is every channel's evidence, newest version string last: from
// the counters' grouped rows, when each channel first and last told each
// version, the halts and the adoption medians per (channel, version) (a
// missing median is -1). older(channel, a, b) reports whether version a is
// older than b on channel (false when either does not parse). Versions
// last told before since are left out.
func Compute(rows []resolver.EvidenceRow, told map[resolver.ChannelVersion]resolver.EvidenceTold,
	halts map[resolver.ChannelVersion]int, p50 map[resolver.ChannelVersion]float64,
	older func(channel, a, b string) bool, since time.Time) map[string][]Version {
	by := map[resolver.ChannelVersion]*Version{}
	for k, t := range told {
		if t.Last.Before(since) {
			continue
		}
		med, ok := p50[k]
		if !ok {
			med = -1
		}
		by[k] = &Version{Channel: k.Channel, Version: k.Version, FirstTold: t.First, LastTold: t.Last, AdoptionP50: med, Halts: halts[k]}
	}
	for _, r := range rows {
		ev := by[resolver.ChannelVersion{Channel: r.Channel, Version: r.Served}]
		if ev == nil {
			continue
		}
		ev.Told += r.Clusters
		switch {
		case r.Reported == r.Served:
			ev.Adopted += r.Clusters
		case r.Old && older(r.Channel, r.Reported, r.Served):
			ev.Stuck += r.Clusters
		}
	}
	out := map[string][]Version{}
	for _, ev := range by {
		out[ev.Channel] = append(out[ev.Channel], *ev)
	}
	for _, list := range out {
		sort.Slice(list, func(i, j int) bool { return list[i].Version < list[j].Version })
	}
	return out
}

// Of is version v's evidence in list; a zero one (nothing told) when
// absent.
func Of(list []Version, v string) Version {
	for _, e := range list {
		if e.Version == v {
			return e
		}
	}
	return Version{Version: v, AdoptionP50: -1}
}

// Ready says whether a channel with policy p may move to the version its
// from channel answers, given that version's evidence on from at now;
// when not, why, as a person reads it ("soak 3h left", "12 of 20
// adopted", "stuck 8% > 5%", "halted").
func Ready(p catalog.PromotePolicy, ev Version, now time.Time) (bool, string) {
	switch {
	case ev.FirstTold.IsZero() || ev.Told == 0:
		return false, fmt.Sprintf("%s has not been told to any cluster of %s yet", ev.Version, p.From)
	case ev.Halts > 0:
		return false, fmt.Sprintf("a rollout of %s on %s was halted", ev.Version, p.From)
	}
	if left := ev.FirstTold.Add(p.Soak).Sub(now); left > 0 {
		return false, "soak " + minutes(left) + " left"
	}
	if ev.Adopted < p.MinAdopted {
		return false, fmt.Sprintf("%d of %d adopted", ev.Adopted, p.MinAdopted)
	}
	if ratio := float64(ev.Stuck) / float64(ev.Told); ratio > p.MaxStuckRatio {
		return false, fmt.Sprintf("stuck %.0f%% > %.0f%%", ratio*100, p.MaxStuckRatio*100)
	}
	return true, ""
}

// The actors of the changes evidence makes: promotions and yanks.
const (
	PromotionActor = "tidemark:promotion"
	YankActor      = "tidemark:evidence"
)

// Paused says whether a promoting channel's pin, set by pinnedBy, pauses
// its promotion: a pin by a person or a token does; one by promotion or a
// yank does not.
func Paused(pin, pinnedBy string) bool {
	return pin != "" && pinnedBy != PromotionActor && pinnedBy != YankActor
}

// minutes is d as a person reads a wait: "3h05m", "42m", at least "1m".
func minutes(d time.Duration) string {
	m := max(int((d+time.Minute-1)/time.Minute), 1)
	if m < 60 {
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}
