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

// Version is one version's evidence on one channel.
type Version struct {
	Version     string
	Told        int
	Adopted     int
	Stuck       int
	FirstTold   time.Time
	AdoptionP50 float64 // seconds; -1 with no adopted cluster
	Halts       int
}

// Compute is every version's evidence from the fleet's grouped rows, the
// versions' first-told times and adoption medians, and the halts per
// version. older(a, b) reports whether version a is older than b (false
// when either does not parse). Versions first told before since are left
// out. Sorted by version string.
func Compute(rows []resolver.EvidenceRow, vers map[string]resolver.EvidenceVersion, halts map[string]int,
	older func(a, b string) bool, since time.Time) []Version {
	by := map[string]*Version{}
	for v, x := range vers {
		if x.FirstTold.Before(since) {
			continue
		}
		by[v] = &Version{Version: v, FirstTold: x.FirstTold, AdoptionP50: x.AdoptionP50, Halts: halts[v]}
	}
	for _, r := range rows {
		ev := by[r.Served]
		if ev == nil {
			continue
		}
		ev.Told += r.Clusters
		switch {
		case r.Reported == r.Served:
			ev.Adopted += r.Clusters
		case r.Old && older(r.Reported, r.Served):
			ev.Stuck += r.Clusters
		}
	}
	out := make([]Version, 0, len(by))
	for _, ev := range by {
		out = append(out, *ev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
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
		return false, fmt.Sprintf("soak %s left", left.Round(time.Minute))
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
