package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/server/core"
)

// decide asks the one decision (door.Decide) about a change of e's
// channel through door, by the request's principal, now. A refusal comes
// back as the error to return; the rest is the verdict to act on.
func (s *API) decide(c echo.Context, d door.Door, e *core.Entry, override bool) (door.Verdict, error) {
	g, err := s.governanceOf(c, e)
	if err != nil {
		return door.Verdict{}, err
	}
	if c.Request().Header.Get(core.ConsoleHeader) == "1" {
		d = door.Console(d)
	}
	v := door.Decide(door.Change{Door: d, Channel: e.Ans.Channel.Name, Override: override}, core.Principal(c), g, time.Now())
	s.Metrics.Decision(d, v)
	if v.Outcome == door.Refuse {
		return v, v.Err
	}
	return v, nil
}

// governanceOf is e's channel's governance now: its approvals and
// windows (configuration) and the freeze covering it (the database).
func (s *API) governanceOf(c echo.Context, e *core.Entry) (door.Governance, error) {
	ch := &e.Ans.Channel
	g := door.Governance{Approvals: ch.Approvals, Windows: ch.Windows}
	f, err := s.frozen(c.Request().Context(), ch.Name)
	if err != nil {
		return g, err
	}
	g.Freeze = f
	return g, nil
}
