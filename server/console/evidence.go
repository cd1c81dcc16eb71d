package console

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/evidence"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/evidenceview"
)

// Evidence in the console: each version the channel told its clusters,
// with how many were told, adopted and are stuck, drawn as bars like the
// fleet's (SVG, no JavaScript); and, for a channel with promote:, why it
// is waiting. Counts only, like the fleet section: no cluster is named.

// uiEvidence is the channel page's evidence section; nil when the server
// records no fleet.
type uiEvidence struct {
	Rows    []uiEvidenceRow
	Problem *openapi.Problem
	Promote *uiPromotion
	Yank    string // the yank policy in words, "" without one
	// StuckAfter is fleet.stuck_after in words ("2m"), for the caption.
	StuckAfter string
}

type uiEvidenceRow struct {
	evidence.Version
	AdoptedPct, StuckPct float64 // of Told, for the bars
	P50                  string  // median time to adopt, "" when none adopted
	Chart                *uiChart
}

// uiPromotion is a promoting channel's state as this replica sees it.
type uiPromotion struct {
	From    string
	Policy  string // "soak 3h, 20 adopted, stuck at most 5%"
	Target  string // what From answers, "" when nothing
	Paused  bool
	Waiting string // why it has not moved; "" when it serves Target
	Ready   bool   // every condition holds: the next round moves it
}

// channelEvidence is e's evidence section.
func (s *Console) channelEvidence(c echo.Context, v *core.View, e *core.Entry) *uiEvidence {
	if s.Opts.Fleet.Store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
	defer cancel()
	ch := e.Ans.Channel
	out := &uiEvidence{StuckAfter: config.ShortDuration(cmp.Or(s.Opts.Fleet.StuckAfter, config.DefaultStuckAfter))}
	if y := ch.Yank; y != nil {
		out.Yank = fmt.Sprintf("a version it serves is halted and held once %d or more clusters were told it and more than %.0f%% of them are stuck", y.MinTold, y.MaxStuckRatio*100)
	}
	list, err := s.ev.Of(ctx, ch.Name)
	if err != nil {
		out.Problem = problemOf(err)
		return out
	}
	history, err := s.ev.History(ctx, ch.Name, evidence.Days)
	if err != nil {
		out.Problem = problemOf(err)
	}
	now := time.Now()
	for _, ev := range evidenceview.Indexed(v, ch.Source, list) {
		r := uiEvidenceRow{Version: ev, Chart: adoptionChart(history[ev.Version], now)}
		if ev.Told > 0 {
			r.AdoptedPct = 100 * float64(ev.Adopted) / float64(ev.Told)
			r.StuckPct = 100 * float64(ev.Stuck) / float64(ev.Told)
		}
		if ev.AdoptionP50 >= 0 {
			r.P50 = config.ShortDuration(time.Duration(ev.AdoptionP50 * float64(time.Second)).Round(time.Second))
		}
		out.Rows = append(out.Rows, r)
	}
	if ch.Promote != nil {
		out.Promote = s.promotionOf(ctx, v, e)
	}
	return out
}

// promotionOf says why e's promotion waits, from the same evidence, holds
// and rules the promoting replica uses; approvals it leaves to the
// pending changes.
func (s *Console) promotionOf(ctx context.Context, v *core.View, e *core.Entry) *uiPromotion {
	p := *e.Ans.Channel.Promote
	pr := &uiPromotion{From: p.From, Policy: fmt.Sprintf("soak %s, %d adopted, stuck at most %.0f%%", config.ShortDuration(p.Soak), p.MinAdopted, p.MaxStuckRatio*100)}
	pr.Paused = evidence.Paused(e.Ans.State.Pin, e.Ans.State.PinnedBy)
	pr.Target, pr.Waiting, pr.Ready = s.ev.Promotion(ctx, v, e)
	return pr
}
