package api

import (
	"errors"
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

// alertmanager takes Alertmanager's webhook (payload version 4) and halts
// the rollouts the alert-to-halt policy (resolver.HaltsFor) names,
// audited with the alert's name and summary. Alertmanager retries a
// non-2xx answer, so an alert that halts nothing (the rollout is already
// halted or complete, the channel unknown) is reported, not refused.
func (s *API) alertmanager(c echo.Context) error {
	if s.Opts.Rollouts.Store == nil {
		return s.WriteUnavailable(c)
	}
	var p openapi.AlertmanagerPayload
	if err := core.DecodeForeign(c, &p, core.MaxAlertmanagerBody); err != nil {
		return err
	}
	if p.Version != "4" {
		return core.InvalidParam("version", "Alertmanager webhook payload version %q: want \"4\"", p.Version)
	}
	v, err := s.View()
	if err != nil {
		return err
	}
	out := openapi.AlertsResult{Halted: []string{}, Ignored: []openapi.IgnoredAlert{}}
	ctx := c.Request().Context()
	var changed []string
	alerts := make([]resolver.Alert, 0, len(p.Alerts))
	for _, a := range p.Alerts {
		alerts = append(alerts, resolver.Alert{Status: a.Status, Labels: a.Labels, Annotations: a.Annotations})
	}
	for _, h := range resolver.HaltsFor(alerts) {
		name := h.Channel
		ignore := func(why string) {
			out.Ignored = append(out.Ignored, openapi.IgnoredAlert{Alertname: h.Alertname, Channel: name, Reason: why})
		}
		if _, err := v.Channel(name); err != nil {
			ignore(fmt.Sprintf("channel %q is not configured", name))
			continue
		}
		// A halt is a safety action: only the scope rule applies.
		verdict := door.Decide(door.Change{Door: door.AlertHalt, Channel: name}, core.Principal(c), door.Governance{}, time.Now())
		s.Metrics.Decision(door.AlertHalt, verdict)
		if verdict.Outcome == door.Refuse {
			ignore(verdict.Err.Error())
			continue
		}
		r, err := s.Opts.Rollouts.Store.RolloutControl(ctx, name, resolver.RolloutHalt, core.Actor(c), h.Reason)
		switch {
		case errors.Is(err, resolver.ErrNotFound), errors.Is(err, resolver.ErrState):
			ignore(err.Error())
			continue
		case err != nil:
			return fmt.Errorf("halt rollout of %q for alert %s: %w", name, h.Alertname, err)
		}
		s.rolloutChanged(r, resolver.RolloutHalt, core.Actor(c), h.Reason)
		out.Halted = append(out.Halted, name)
		changed = append(changed, name)
	}
	for _, name := range changed {
		if err := s.reloadAfterWrite(ctx, snapshot.Change{Channel: name}); err != nil {
			return fmt.Errorf("%w: rollout of %q halted, but this replica could not reload it yet: %w", resolver.ErrUnavailable, name, err)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}
