package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// alertChannelLabel names the channel whose rollout a firing alert halts.
const alertChannelLabel = "tidemark_channel"

// alertmanager takes Alertmanager's webhook (payload version 4): every
// firing alert labelled tidemark_channel halts that channel's rollout,
// audited with the alert's name and summary. Resolved alerts change
// nothing: resuming is a person's decision. Alertmanager retries a
// non-2xx answer, so an alert that halts nothing (the rollout is already
// halted or complete, the channel unknown) is reported, not refused.
func (s *Server) alertmanager(c echo.Context) error {
	if s.opts.Rollouts.Store == nil {
		return s.writeUnavailable(c)
	}
	var p openapi.AlertmanagerPayload
	if err := decodeForeign(c, &p, maxAlertmanagerBody); err != nil {
		return err
	}
	if p.Version != "4" {
		return invalidParam("version", "Alertmanager webhook payload version %q: want \"4\"", p.Version)
	}
	v, err := s.view()
	if err != nil {
		return err
	}
	out := openapi.AlertsResult{Halted: []string{}, Ignored: []openapi.IgnoredAlert{}}
	ctx := c.Request().Context()
	var changed []string
	for _, a := range p.Alerts {
		name := a.Labels[alertChannelLabel]
		if a.Status != "firing" || name == "" {
			continue
		}
		alertname := a.Labels["alertname"]
		ignore := func(why string) {
			out.Ignored = append(out.Ignored, openapi.IgnoredAlert{Alertname: alertname, Channel: name, Reason: why})
		}
		if _, err := v.channel(name); err != nil {
			ignore(fmt.Sprintf("channel %q is not configured", name))
			continue
		}
		if who := principal(c); !who.MayWriteChannel(name) {
			ignore(fmt.Sprintf("token %q is limited to channels [%s]", who.Name, strings.Join(who.Channels, ",")))
			continue
		}
		reason := alertname
		if sum := strings.TrimSpace(a.Annotations["summary"]); sum != "" {
			reason += ": " + sum
		}
		r, err := s.opts.Rollouts.Store.RolloutControl(ctx, name, resolver.RolloutHalt, actor(c), reason)
		switch {
		case errors.Is(err, resolver.ErrNotFound), errors.Is(err, resolver.ErrState):
			ignore(err.Error())
			continue
		case err != nil:
			return fmt.Errorf("halt rollout of %q for alert %s: %w", name, alertname, err)
		}
		s.rolloutChanged(r, resolver.RolloutHalt, actor(c), reason)
		out.Halted = append(out.Halted, name)
		changed = append(changed, name)
	}
	for _, name := range changed {
		if err := s.reloadAfterWrite(ctx, resolver.Change{Channel: name}); err != nil {
			return fmt.Errorf("%w: rollout of %q halted, but this replica could not reload it yet: %w", resolver.ErrUnavailable, name, err)
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}
