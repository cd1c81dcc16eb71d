package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/door"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// rolloutActions are the controls of POST .../rollout/{action}.
var rolloutActions = map[string]bool{
	resolver.RolloutPause: true, resolver.RolloutResume: true,
	resolver.RolloutAdvance: true, resolver.RolloutHalt: true,
}

// rolloutDoors are the controls' doors of the one decision: advance and
// resume move a channel (a freeze or a closed window refuses them), pause
// and halt are safety actions.
var rolloutDoors = map[string]door.Door{
	resolver.RolloutPause: door.RolloutPause, resolver.RolloutResume: door.RolloutResume,
	resolver.RolloutAdvance: door.RolloutAdvance, resolver.RolloutHalt: door.RolloutHalt,
}

func (s *API) registerRollouts(e *echo.Echo) {
	s.Get(e, "/api/v1/channels/:name/rollout", s.getRollout, s.DBDeadline)
	e.POST("/api/v1/channels/:name/rollout/:action", s.controlRollout, s.DBDeadline, s.RequireChannelScope(core.ScopePromote))
	// Each alert names its channel: the handler ignores those a limited
	// token may not write.
	e.POST("/api/v1/alerts/alertmanager", s.alertmanager, s.DBDeadline, s.Authorize(core.ScopePromote, true, core.ReachHandler))
}

// rolloutEntry is the channel named by :name and its rollout; 404 when it
// never rolled out.
func (s *API) rolloutEntry(c echo.Context) (*core.Entry, error) {
	_, e, err := s.ChannelParam(c)
	if err != nil {
		return nil, err
	}
	if rv := e.Ans.Rollout; rv == nil || rv.Baseline {
		return nil, fmt.Errorf("%w: channel %q has never rolled out", resolver.ErrNotFound, e.Ans.Channel.Name)
	}
	return e, nil
}

// getRollout is the rollout with the fleet's counts, read from the
// database: the progress itself comes from the snapshot.
func (s *API) getRollout(c echo.Context) error {
	e, err := s.rolloutEntry(c)
	if err != nil {
		return err
	}
	if s.Opts.Rollouts.Store == nil {
		return s.WriteUnavailable(c)
	}
	r, err := s.RolloutWithCounts(c.Request().Context(), e)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, r)
}

// controlRollout pauses, resumes, advances or halts a rollout. The store
// checks the state at the database's clock, under the channel's lock.
func (s *API) controlRollout(c echo.Context) error {
	action := core.PathParam(c, "action")
	if !rolloutActions[action] {
		return core.InvalidParam("action", "rollout action %q: want pause, resume, advance or halt", action)
	}
	if s.Opts.Rollouts.Store == nil {
		return s.WriteUnavailable(c)
	}
	e, err := s.rolloutEntry(c)
	if err != nil {
		return err
	}
	var req openapi.RolloutControlRequest
	if err := core.DecodeBody(c, &req, false); err != nil {
		return err
	}
	reason := req.Reason
	if reason == "" {
		reason = c.QueryParam("reason")
	}
	if req.Rollback && action != resolver.RolloutHalt {
		return core.InvalidParam("rollback", "rollback applies to halt only, not to %s", action)
	}
	if req.OverrideFreeze && action != resolver.RolloutAdvance && action != resolver.RolloutResume {
		return core.InvalidParam("override_freeze", "override_freeze applies to advance and resume only, not to %s", action)
	}
	if _, err := s.decide(c, rolloutDoors[action], e, req.OverrideFreeze); err != nil {
		return err
	}
	name := e.Ans.Channel.Name
	var r resolver.Rollout
	if req.Rollback {
		r, err = s.Opts.Rollouts.Store.RolloutRollback(c.Request().Context(), name, core.Actor(c), reason)
	} else {
		r, err = s.Opts.Rollouts.Store.RolloutControl(c.Request().Context(), name, action, core.Actor(c), reason)
	}
	if err != nil {
		return fmt.Errorf("%s rollout of %q: %w", action, name, err)
	}
	s.rolloutChanged(r, action, core.Actor(c), reason)
	if err := s.reloadAfterWrite(c.Request().Context(), snapshot.Change{Channel: name}); err != nil {
		return fmt.Errorf("%w: rollout of %q: %s done, but this replica could not reload it yet: %w", resolver.ErrUnavailable, name, action, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, core.RolloutJSON(&r, r.At(time.Now()), s.Opts.Rollouts.Counts.Of(&r)))
}

// rolloutChanged logs a rollout event. The outside hears of it through
// the notification outbox (dev.tidemark.rollout.changed), which the store
// writes in the event's own transaction.
func (s *API) rolloutChanged(r resolver.Rollout, what, actor, reason string) {
	s.Log.Info("rollout changed", "channel", r.Channel, "from", r.From, "to", r.To, "event", what, "actor", actor, "reason", reason)
}
