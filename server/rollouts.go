package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/rollouts"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// RolloutStore keeps staged rollouts (*store.Store).
type RolloutStore interface {
	rollouts.Store
	// RolloutControl applies a pause, resume, advance or halt: ErrNotFound
	// when the channel never rolled out, ErrState when its state refuses.
	RolloutControl(ctx context.Context, channel, kind, actor, reason string) (resolver.Rollout, error)
	// RolloutRollback halts as a rollback: clusters already on the
	// rollout's version go back to its from too.
	RolloutRollback(ctx context.Context, channel, actor, reason string) (resolver.Rollout, error)
	// RolloutClusters counts the fleet's clusters last served to and from.
	RolloutClusters(ctx context.Context, channel, from, to string) (onTo, onFrom int, err error)
}

// RolloutOptions configures staged rollouts (CONTRACT section 7). The
// loops that record and count them are internal/rollouts'.
type RolloutOptions struct {
	// Store keeps them; nil: the rollout routes answer 503 (rollouts
	// already recorded are still served).
	Store RolloutStore
	// Counts are the rollouts' cluster counts the channel object shows,
	// filled by the rollout loops. nil: none are shown.
	Counts *rollouts.Counts
}

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

// rolloutJSON is r with its progress p and the fleet's counts (nil when
// none is known).
func rolloutJSON(r *resolver.Rollout, p resolver.Progress, clusters *openapi.RolloutClusters) *openapi.Rollout {
	var next *time.Time
	if !p.NextStepAt.IsZero() {
		t := p.NextStepAt.UTC()
		next = &t
	}
	return &openapi.Rollout{
		Channel: r.Channel, From: r.From, To: r.To, State: string(p.State),
		Percent: p.Percent, Step: p.Step + 1, Steps: r.Steps,
		StartedAt: r.StartedAt.UTC(), NextStepAt: next, Clusters: clusters,
	}
}

// channelRollout is the channel object's "rollout" at now, with the
// counts cc.
func channelRollout(rv *resolver.RolloutView, now time.Time, cc *openapi.RolloutClusters) *openapi.Rollout {
	if rv == nil || rv.Baseline {
		return nil
	}
	return rolloutJSON(&rv.Rollout, rv.Progress(now), cc)
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

// rolloutWithCounts is e's rollout with the fleet's counts, as the API
// answers it and the console shows it. The caller has checked that there
// is a rollout store and that e has rolled out.
func (s *Server) rolloutWithCounts(ctx context.Context, e *channelEntry) (*openapi.Rollout, error) {
	rv := e.ans.Rollout
	onTo, onFrom, err := s.opts.Rollouts.Store.RolloutClusters(ctx, rv.Channel, rv.From, rv.To)
	if err != nil {
		return nil, fmt.Errorf("rollout of %q: %w", rv.Channel, err)
	}
	return rolloutJSON(&rv.Rollout, rv.Progress(time.Now()), &openapi.RolloutClusters{To: onTo, From: onFrom}), nil
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
