package api

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/lineview"
)

// sourceLifecycle is a source's lines, newest first, with the active
// clusters on each (no token, like the versions).
func (s *API) sourceLifecycle(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	source := core.PathParam(c, "source")
	tab, ok := v.Snap.Lines().Table(source)
	if !ok {
		return core.BadParam("source", fmt.Errorf("%w: source %q", resolver.ErrNotFound, source))
	}
	counts := lineview.For(s.Server).Of(c.Request().Context(), v, source)
	out := openapi.SourceLifecycle{Lines: make([]openapi.LifecycleLine, 0, len(tab.Lines))}
	for _, l := range tab.Lines {
		out.Lines = append(out.Lines, openapi.LifecycleLine{Line: l.Line, Release: lineview.TimeOrNil(l.Release),
			DeprecatedFrom: lineview.TimeOrNil(l.DeprecatedFrom), End: lineview.TimeOrNil(l.End), Classification: string(l.Class),
			Clusters: counts[l.Line]})
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
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
		return v, channel, lineview.Classified(v, v.Entry(channel).Ans.Channel.Source, class), nil
	}
	if v, err = s.View(); err != nil {
		return nil, "", nil, err
	}
	versions = []string{}
	for _, sv := range v.Snap.Sources() {
		versions = append(versions, lineview.Classified(v, sv.Source.Name, class)...)
	}
	return v, "", versions, nil
}
