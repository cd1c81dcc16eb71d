package api

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// decide asks the one decision (resolver.Decide) about a change of e's
// channel through door, by the request's principal, now. A refusal comes
// back as the error to return; the rest is the verdict to act on.
func (s *API) decide(c echo.Context, door resolver.Door, e *core.Entry, override bool) (resolver.Verdict, error) {
	g, err := s.governanceOf(c, e)
	if err != nil {
		return resolver.Verdict{}, err
	}
	if c.Request().Header.Get(core.ConsoleHeader) == "1" {
		door = resolver.ConsoleDoor(door)
	}
	v := resolver.Decide(resolver.Change{Door: door, Channel: e.Ans.Channel.Name, Override: override}, core.Principal(c), g, time.Now())
	s.Metrics.Decision(door, v)
	if v.Outcome == resolver.Refuse {
		return v, v.Err
	}
	return v, nil
}

// governanceOf is e's channel's governance now: its approvals and
// windows (configuration) and the freeze covering it (the database).
func (s *API) governanceOf(c echo.Context, e *core.Entry) (resolver.GovernanceState, error) {
	ch := &e.Ans.Channel
	g := resolver.GovernanceState{Approvals: ch.Approvals, Windows: ch.Windows}
	f, err := s.frozen(c.Request().Context(), ch.Name)
	if err != nil {
		return g, err
	}
	g.Freeze = f
	return g, nil
}
