package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// rolloutActions are the controls of POST .../rollout/{action}.
var rolloutActions = map[string]bool{
	resolver.RolloutPause: true, resolver.RolloutResume: true,
	resolver.RolloutAdvance: true, resolver.RolloutHalt: true,
}

func (s *Server) registerRollouts(e *echo.Echo) {
	s.get(e, "/api/v1/channels/:name/rollout", s.getRollout, s.dbDeadline)
	e.POST("/api/v1/channels/:name/rollout/:action", s.controlRollout, s.dbDeadline, s.requireChannelScope(ScopePromote))
	// Each alert names its channel: the handler ignores those a limited
	// token may not write.
	e.POST("/api/v1/alerts/alertmanager", s.alertmanager, s.dbDeadline, s.authorize(ScopePromote, true, reachHandler))
}

// rolloutEntry is the channel named by :name and its rollout; 404 when it
// never rolled out.
func (s *Server) rolloutEntry(c echo.Context) (*channelEntry, error) {
	_, e, err := s.channelParam(c)
	if err != nil {
		return nil, err
	}
	if rv := e.ans.Rollout; rv == nil || rv.Baseline {
		return nil, fmt.Errorf("%w: channel %q has never rolled out", resolver.ErrNotFound, e.ans.Channel.Name)
	}
	return e, nil
}

// getRollout is the rollout with the fleet's counts, read from the
// database: the progress itself comes from the snapshot.
func (s *Server) getRollout(c echo.Context) error {
	e, err := s.rolloutEntry(c)
	if err != nil {
		return err
	}
	if s.opts.Rollouts.Store == nil {
		return s.writeUnavailable(c)
	}
	r, err := s.rolloutWithCounts(c.Request().Context(), e)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, r)
}

// controlRollout pauses, resumes, advances or halts a rollout. The store
// checks the state at the database's clock, under the channel's lock.
func (s *Server) controlRollout(c echo.Context) error {
	action := pathParam(c, "action")
	if !rolloutActions[action] {
		return invalidParam("action", "rollout action %q: want pause, resume, advance or halt", action)
	}
	if s.opts.Rollouts.Store == nil {
		return s.writeUnavailable(c)
	}
	e, err := s.rolloutEntry(c)
	if err != nil {
		return err
	}
	var req openapi.RolloutControlRequest
	if err := decodeBody(c, &req, false); err != nil {
		return err
	}
	reason := req.Reason
	if reason == "" {
		reason = c.QueryParam("reason")
	}
	if req.Rollback && action != resolver.RolloutHalt {
		return invalidParam("rollback", "rollback applies to halt only, not to %s", action)
	}
	name := e.ans.Channel.Name
	var r resolver.Rollout
	if req.Rollback {
		r, err = s.opts.Rollouts.Store.RolloutRollback(c.Request().Context(), name, actor(c), reason)
	} else {
		r, err = s.opts.Rollouts.Store.RolloutControl(c.Request().Context(), name, action, actor(c), reason)
	}
	if err != nil {
		return fmt.Errorf("%s rollout of %q: %w", action, name, err)
	}
	s.rolloutChanged(r, action, actor(c), reason)
	if err := s.reloadAfterWrite(c.Request().Context(), resolver.Change{Channel: name}); err != nil {
		return fmt.Errorf("%w: rollout of %q: %s done, but this replica could not reload it yet: %w", resolver.ErrUnavailable, name, action, err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, rolloutJSON(&r, r.At(time.Now()), s.opts.Rollouts.Counts.Of(&r)))
}

// rolloutChanged logs a rollout event. The outside hears of it through
// the notification outbox (dev.tidemark.rollout.changed), which the store
// writes in the event's own transaction.
func (s *Server) rolloutChanged(r resolver.Rollout, what, actor, reason string) {
	s.log.Info("rollout changed", "channel", r.Channel, "from", r.From, "to", r.To, "event", what, "actor", actor, "reason", reason)
}
