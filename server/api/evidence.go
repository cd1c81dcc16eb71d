package api

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
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
	older := func(a, b string) bool {
		va, ok1 := v.Snap.Reported(channel, a)
		vb, ok2 := v.Snap.Reported(channel, b)
		return ok1 && ok2 && resolver.Compare(va, vb) < 0
	}
	list := evidence.Compute(rows, vers, halts, older, now.Add(-evidenceDays))
	out := make([]openapi.Evidence, 0, len(list))
	for _, ev := range list {
		j := openapi.Evidence{Version: ev.Version, Told: ev.Told, Adopted: ev.Adopted, Stuck: ev.Stuck, Halts: ev.Halts}
		t := ev.FirstTold.UTC()
		j.FirstTold = &t
		if ev.AdoptionP50 >= 0 {
			p := ev.AdoptionP50
			j.AdoptionP50Seconds = &p
		}
		out = append(out, j)
	}
	s.ev.mu.Lock()
	if s.ev.m == nil {
		s.ev.m = map[string]cachedEvidence{}
	}
	s.ev.m[channel] = cachedEvidence{at: now, out: out}
	s.ev.mu.Unlock()
	return out, nil
}
