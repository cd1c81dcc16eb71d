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
	return s.decideDoor(c, door.Change{Door: d, Channel: e.Ans.Channel.Name, Override: override}, e)
}

// decideDoor is decide for a change described whole (a move's target
// and allow_expired).
func (s *API) decideDoor(c echo.Context, ch door.Change, e *core.Entry) (door.Verdict, error) {
	g, err := s.governanceOf(c, e)
	if err != nil {
		return door.Verdict{}, err
	}
	if c.Request().Header.Get(core.ConsoleHeader) == "1" {
		ch.Door = door.Console(ch.Door)
	}
	v := door.Decide(ch, core.Principal(c), g, time.Now())
	s.Metrics.Decision(ch.Door, v)
	if v.Outcome == door.Refuse {
		return v, v.Err
	}
	return v, nil
}

// withAllowExpired is reason as audited when an admin's allow_expired let
// a change to an expired version through.
func withAllowExpired(reason string, v door.Verdict) string {
	if !v.AllowedExpired {
		return reason
	}
	if reason == "" {
		return "allow_expired"
	}
	return reason + " (allow_expired)"
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
