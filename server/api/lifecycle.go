package api

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/server/core"
)

// sourceLifecycle is a source's lines, newest first, with the active
// clusters on each (no token, like the versions).
func (s *API) sourceLifecycle(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	source := core.PathParam(c, "source")
	tab, err := v.Snap.Lifecycle(source)
	if err != nil {
		return core.ParamIf("source", resolver.ErrNotFound, err)
	}
	counts := s.LineClusters(c.Request().Context(), v, source)
	out := openapi.SourceLifecycle{Lines: make([]openapi.LifecycleLine, 0, len(tab.Lines))}
	for _, l := range tab.Lines {
		out.Lines = append(out.Lines, openapi.LifecycleLine{Line: l.Line, Release: core.TimeOrNil(l.Release),
			DeprecatedFrom: core.TimeOrNil(l.DeprecatedFrom), End: core.TimeOrNil(l.End), Classification: string(l.Class),
			Clusters: counts[l.Line]})
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}

// LineClusters counts the active clusters per line of source, over its
// channels; empty when the fleet is not kept or the database is away (the
// lines are still answered).
func (s *API) LineClusters(ctx context.Context, v *core.View, source string) map[string]int {
	byLine, _, err := s.ActiveByLine(ctx, v)
	if err != nil {
		s.Log.WarnContext(ctx, "counting clusters per line failed; answering without them", "source", source, "err", err)
	}
	if byLine[source] == nil {
		return map[string]int{}
	}
	return byLine[source]
}

// fleetFilter is a fleet listing's channel= and classification=: with a
// classification, the versions of the lines so classified (of the
// channel's source, or of every source without a channel, which is then
// optional); versions is nil without one.
func (s *API) fleetFilter(c echo.Context) (v *core.View, channel string, versions []string, err error) {
	class := lifecycle.Classification(c.QueryParam("classification"))
	if class == "" {
		v, channel, err = s.fleetChannel(c)
		return v, channel, nil, err
	}
	if class != lifecycle.Deprecated && class != lifecycle.Expired && class != lifecycle.Supported {
		return nil, "", nil, core.InvalidParam("classification", "classification %q: want expired, deprecated or supported", class)
	}
	if c.QueryParam("channel") != "" {
		if v, channel, err = s.fleetChannel(c); err != nil {
			return nil, "", nil, err
		}
		return v, channel, v.Snap.Classified(v.Entry(channel).Ans.Channel.Source, class), nil
	}
	if v, err = s.View(); err != nil {
		return nil, "", nil, err
	}
	versions = []string{}
	for _, sv := range v.Snap.Sources() {
		versions = append(versions, v.Snap.Classified(sv.Source.Name, class)...)
	}
	return v, "", versions, nil
}
