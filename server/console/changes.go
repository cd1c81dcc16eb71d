package console

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// The console's changes page (CONTRACT section 15): scheduled changes,
// those pending approval (with approve and reject, through the API with
// the person's token), and what became of the others; and the freezes.

type uiChangesBody struct {
	Scheduled, Pending, Decided []openapi.Change
	Freezes                     []openapi.Freeze
	Problem                     *openapi.Problem
}

// maxUIChanges bounds the changes the page lists.
const maxUIChanges = 100

func (s *Console) uiChanges(c echo.Context) error {
	b := uiChangesBody{}
	g, err := s.GovernanceStore()
	if err == nil {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
		defer cancel()
		var cs []resolver.ScheduledChange
		if cs, err = g.Changes(ctx, "", maxUIChanges); err == nil {
			for _, ch := range cs {
				j := core.ChangeJSON(ch)
				switch ch.State {
				case resolver.ChangeScheduled:
					b.Scheduled = append(b.Scheduled, j)
				case resolver.ChangePending:
					b.Pending = append(b.Pending, j)
				default:
					b.Decided = append(b.Decided, j)
				}
			}
			now := time.Now()
			var fs []resolver.Freeze
			if fs, err = g.Freezes(ctx, now); err == nil {
				for _, f := range fs {
					b.Freezes = append(b.Freezes, core.FreezeJSON(f, now))
				}
			}
		}
	}
	if err != nil {
		b.Problem = problemOf(err)
	}
	return s.render(c, http.StatusOK, "page_changes.html", uiPage{Title: "Changes", Nav: "changes", Body: b})
}

// uiChannelGovernance is what the channel page shows of governance: its
// windows, its hold, and its next scheduled change.
type uiChannelGovernance struct {
	Windows []string
	Hold    *resolver.Hold
	Next    *openapi.Change
	// Approvals is how many each change needs (0: none); Pending the
	// channel's changes waiting for them.
	Approvals int
	Pending   []openapi.Change
}

// Frozen reports whether a freeze (not a window) holds the channel: pins
// and unpins are refused then.
func (g uiChannelGovernance) Frozen() bool { return g.Hold != nil && g.Hold.Reason != "window" }

func (s *Console) channelGovernance(ctx context.Context, e *core.Entry) uiChannelGovernance {
	g := uiChannelGovernance{Hold: e.Ans.State.Hold, Approvals: e.Ans.Channel.Approvals}
	for _, w := range e.Ans.Channel.Windows {
		g.Windows = append(g.Windows, windowText(w))
	}
	if gs, err := s.GovernanceStore(); err == nil {
		ctx, cancel := context.WithTimeout(ctx, s.Opts.DBTimeout)
		defer cancel()
		if cs, err := gs.Changes(ctx, resolver.ChangePending, maxUIChanges); err == nil {
			for _, c := range cs {
				if c.Channel == e.Ans.Channel.Name {
					g.Pending = append(g.Pending, core.ChangeJSON(c))
				}
			}
		}
		if cs, err := gs.Changes(ctx, resolver.ChangeScheduled, maxUIChanges); err == nil {
			for i := len(cs) - 1; i >= 0; i-- { // oldest first: the next to apply
				if cs[i].Channel == e.Ans.Channel.Name && (g.Next == nil || cs[i].At.Before(*g.Next.At)) {
					j := core.ChangeJSON(cs[i])
					g.Next = &j
				}
			}
		}
	}
	return g
}

func windowText(w resolver.Window) string {
	names := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	days := ""
	for d := 1; d <= 7; d++ { // Monday first
		if w.Days[d%7] {
			if days != "" {
				days += ","
			}
			days += names[d%7]
		}
	}
	return days + " " + clockText(w.Start) + "-" + clockText(w.End) + " " + w.Location.String()
}

func clockText(m int) string {
	return time.Date(0, 1, 1, m/60, m%60, 0, 0, time.UTC).Format("15:04")
}
