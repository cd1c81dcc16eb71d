package console

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// A channel's staged rollout as the console shows it: a progress bar with
// its words in the channel list (the row's openapi.Channel.Rollout, from
// the snapshot) and, on the channel page, the API's own
// GET /api/v1/channels/{name}/rollout, which adds the fleet's counts.

// channelRolloutOf is the rollout section of ch's page: nil when ch never
// rolled out. When the API cannot answer (no database), the section shows
// the channel object's rollout, with the last cluster counts this replica knew (or none yet), and why.
func (s *Console) channelRolloutOf(c echo.Context, e *core.Entry, ch openapi.Channel) (*openapi.Rollout, *openapi.Problem) {
	if ch.Rollout == nil {
		return nil, nil
	}
	if rv := e.Ans.Rollout; rv == nil || rv.Baseline {
		return ch.Rollout, problemOf(fmt.Errorf("%w: channel %q has never rolled out", resolver.ErrNotFound, ch.Name))
	}
	if s.Opts.Rollouts.Store == nil {
		return ch.Rollout, problemOf(fmt.Errorf("%w: GET /api/v1/channels/%s/rollout needs the database, which this server was started without", resolver.ErrUnavailable, ch.Name))
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
	defer cancel()
	r, err := s.RolloutWithCounts(ctx, e)
	if err != nil {
		return ch.Rollout, problemOf(err)
	}
	return r, nil
}

// rolloutSteps is a rollout's steps as a person reads them: "10%, 50%, 100%".
func rolloutSteps(steps []int) string {
	out := make([]string, len(steps))
	for i, p := range steps {
		out[i] = strconv.Itoa(p) + "%"
	}
	return strings.Join(out, ", ")
}

// historyActions are the history's actions in words, where the action's
// own name does not read as one: the rollout events.
var historyActions = map[string]string{
	"rollout-start":    "started a rollout",
	"rollout-step":     "rollout stepped",
	"rollout-complete": "rollout completed",
	"rollout-pause":    "paused the rollout",
	"rollout-resume":   "resumed the rollout",
	"rollout-advance":  "advanced the rollout",
	"rollout-halt":     "halted the rollout",
}

// actionText is action in words, or as it is.
func actionText(action string) string {
	if w, ok := historyActions[action]; ok {
		return w
	}
	return action
}
