// Package evidenceview reads a channel's evidence for the API and the
// console: what the fleet says of each version the channel told its
// clusters (told, adopted, stuck, when first told, how fast adopted, and
// halts), as the indexing leader last computed it (internal/promotion),
// and its adoption over time. It reads Postgres at most every Every per
// channel and replica, however often it is asked, and both doors share
// one cache.
package evidenceview

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/resolver/promote"
	"github.com/tidemark-dev/tidemark/server/core"
)

// Every is how long one read of a channel's evidence is reused: with the
// recorder's flush (1 s) and the leader's pass (2 s), evidence is at most
// 5 s behind the requests that produce it.
const Every = time.Second

// Store is what evidence reads (*store.Store).
type Store interface {
	ChannelEvidence(ctx context.Context, channel string, since time.Time) ([]resolver.Evidence, error)
	EvidenceHistory(ctx context.Context, channel string, since time.Time) (map[string][]resolver.EvidencePoint, error)
}

// Reader reads evidence through its cache.
type Reader struct {
	s     *core.Server
	mu    sync.Mutex
	m     map[string]cached
	holds map[string]cachedHolds // by source, reused like evidence
}

type cachedHolds struct {
	at    time.Time
	holds map[string]string
}

type cached struct {
	at   time.Time
	list []evidence.Version
}

// New is a reader for s's fleet store.
func New(s *core.Server) *Reader {
	return &Reader{s: s, m: map[string]cached{}, holds: map[string]cachedHolds{}}
}

// heldOn is source's evidence holds (version -> reason), read at most
// every Every per source however often a channel list asks.
func (r *Reader) heldOn(ctx context.Context, source string) map[string]string {
	hs, ok := r.s.Opts.Fleet.Store.(interface {
		VersionHolds(ctx context.Context, source string) (map[string]string, error)
	})
	if !ok {
		return nil
	}
	now := time.Now()
	r.mu.Lock()
	c, ok := r.holds[source]
	r.mu.Unlock()
	if ok && now.Sub(c.at) < Every {
		return c.holds
	}
	holds, err := hs.VersionHolds(ctx, source)
	if err != nil {
		return nil
	}
	r.mu.Lock()
	r.holds[source] = cachedHolds{at: now, holds: holds}
	r.mu.Unlock()
	return holds
}

func (r *Reader) store() (Store, error) {
	es, ok := r.s.Opts.Fleet.Store.(Store)
	if !ok {
		return nil, fmt.Errorf("%w: this store keeps no evidence", resolver.ErrUnavailable)
	}
	return es, nil
}

// Of is channel's evidence, by version string, from the cache when fresh.
func (r *Reader) Of(ctx context.Context, channel string) ([]evidence.Version, error) {
	now := time.Now()
	r.mu.Lock()
	if c, ok := r.m[channel]; ok && now.Sub(c.at) < Every {
		r.mu.Unlock()
		return c.list, nil
	}
	r.mu.Unlock()
	es, err := r.store()
	if err != nil {
		return nil, err
	}
	list, err := es.ChannelEvidence(ctx, channel, now.Add(-evidence.Days))
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.m[channel] = cached{at: now, list: list}
	r.mu.Unlock()
	return list, nil
}

// Indexed is list without the versions source no longer indexes (a tag
// deleted since it was told): what the API and the console list.
func Indexed(v *core.View, source string, list []evidence.Version) []evidence.Version {
	out := make([]evidence.Version, 0, len(list))
	for _, ev := range list {
		if _, err := v.Snap.Version(source, ev.Version); err == nil {
			out = append(out, ev)
		}
	}
	return out
}

// History is channel's adoption over the last days, per version, oldest
// point first (the console's chart; not cached: one page view reads it
// once).
func (r *Reader) History(ctx context.Context, channel string, days time.Duration) (map[string][]resolver.EvidencePoint, error) {
	es, err := r.store()
	if err != nil {
		return nil, err
	}
	return es.EvidenceHistory(ctx, channel, time.Now().Add(-days))
}

// JSON is ev as the API writes it.
func JSON(ev evidence.Version) openapi.Evidence {
	j := openapi.Evidence{Version: ev.Version, Told: ev.Told, Adopted: ev.Adopted, Stuck: ev.Stuck, Halts: ev.Halts}
	if !ev.FirstTold.IsZero() {
		t := ev.FirstTold.UTC()
		j.FirstTold = &t
	}
	if ev.AdoptionP50 >= 0 {
		p := ev.AdoptionP50
		j.AdoptionP50Seconds = &p
	}
	return j
}

// Promotion is e's promotion as this replica sees it: the version its
// from channel answers (target, "" when none to move to), why it waits
// ("" when every condition holds or it already answers target), and
// whether the leader's next round moves it. The same rules, holds and
// evidence as the leader's loop; approvals and windows it leaves to the
// pending changes.
func (r *Reader) Promotion(ctx context.Context, v *core.View, e *core.Entry) (target, why string, ready bool) {
	p := e.Ans.Channel.Promote
	if p == nil {
		return "", "", false
	}
	target, why = promote.Target(v.Snap, e.Ans.Channel.Name, time.Now())
	if target == "" || why != "" || promote.Current(v.Snap, e.Ans.Channel.Name, target) {
		return target, why, false
	}
	if why := r.heldOn(ctx, e.Ans.Channel.Source)[target]; why != "" {
		return target, fmt.Sprintf("%s is held on evidence (%s): an admin lifts it", target, why), false
	}
	list, err := r.Of(ctx, p.From)
	if err != nil {
		return target, "evidence unreadable: " + err.Error(), false
	}
	ready, why = evidence.Ready(*p, evidence.Of(list, target), time.Now())
	return target, why, ready
}
