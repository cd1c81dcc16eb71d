package api

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// Evidence: what the fleet says of each version a channel told its
// clusters: told, adopted, stuck, when first told, how fast adopted, and
// halts. Read from Postgres at most every evidenceEvery per channel and
// replica, however often it is asked.

const (
	evidenceEvery = 5 * time.Second
	// evidenceDays bounds the versions listed: those the channel answered
	// in the last 30 days.
	evidenceDays = 30 * 24 * time.Hour
	// stuckAfter: a cluster told a version this long ago that still
	// reports an older one is stuck.
	stuckAfter = time.Hour
)

// evidenceStore is what evidence reads (*store.Store).
type evidenceStore interface {
	Evidence(ctx context.Context, channel string, activeSince, stuckBefore time.Time) ([]resolver.EvidenceRow, map[string]resolver.EvidenceVersion, error)
	RolloutHalts(ctx context.Context, channel string) (map[string]int, error)
}

type evidenceCache struct {
	mu sync.Mutex
	m  map[string]cachedEvidence
}

type cachedEvidence struct {
	at  time.Time
	out []openapi.Evidence
}

func (s *API) channelEvidence(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	name := e.Ans.Channel.Name
	list, err := s.evidenceOf(c.Request().Context(), v, name)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	if want := c.QueryParam("version"); want != "" {
		rv, ok := v.Snap.Reported(name, want)
		if !ok {
			return core.InvalidParam("version", "%q is not a version of channel %q's source", want, name)
		}
		for _, ev := range list {
			if ev.Version == rv.String() {
				return c.JSON(http.StatusOK, ev)
			}
		}
		return c.JSON(http.StatusOK, openapi.Evidence{Version: rv.String()})
	}
	return c.JSON(http.StatusOK, openapi.EvidenceList{Versions: list})
}

// evidenceOf is channel's evidence, from the cache when fresh.
func (s *API) evidenceOf(ctx context.Context, v *core.View, channel string) ([]openapi.Evidence, error) {
	now := time.Now()
	s.ev.mu.Lock()
	if c, ok := s.ev.m[channel]; ok && now.Sub(c.at) < evidenceEvery {
		s.ev.mu.Unlock()
		return c.out, nil
	}
	s.ev.mu.Unlock()
	es, ok := s.Opts.Fleet.Store.(evidenceStore)
	if !ok {
		return nil, fmt.Errorf("%w: this store keeps no evidence", resolver.ErrUnavailable)
	}
	window := s.Opts.Fleet.ActiveWindow
	if window <= 0 {
		window = config.DefaultActiveWindow
	}
	stuck := stuckAfter
	rows, vers, err := es.Evidence(ctx, channel, now.Add(-window), now.Add(-stuck))
	if err != nil {
		return nil, err
	}
	halts, err := es.RolloutHalts(ctx, channel)
	if err != nil {
		return nil, err
	}
	by := map[string]*openapi.Evidence{}
	for ver, x := range vers {
		if now.Sub(x.FirstTold) > evidenceDays {
			continue
		}
		ev := &openapi.Evidence{Version: ver, Halts: halts[ver]}
		t := x.FirstTold.UTC()
		ev.FirstTold = &t
		if x.AdoptionP50 >= 0 {
			p := x.AdoptionP50
			ev.AdoptionP50Seconds = &p
		}
		by[ver] = ev
	}
	for _, r := range rows {
		ev := by[r.Served]
		if ev == nil {
			continue
		}
		ev.Told += r.Clusters
		told, ok1 := v.Snap.Reported(channel, r.Served)
		rep, ok2 := v.Snap.Reported(channel, r.Reported)
		switch {
		case r.Reported == r.Served:
			ev.Adopted += r.Clusters
		case r.Old && ok1 && ok2 && resolver.Compare(rep, told) < 0:
			ev.Stuck += r.Clusters
		}
	}
	out := make([]openapi.Evidence, 0, len(by))
	for _, ev := range by {
		out = append(out, *ev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	s.ev.mu.Lock()
	if s.ev.m == nil {
		s.ev.m = map[string]cachedEvidence{}
	}
	s.ev.m[channel] = cachedEvidence{at: now, out: out}
	s.ev.mu.Unlock()
	return out, nil
}
