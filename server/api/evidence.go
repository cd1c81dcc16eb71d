package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/evidenceview"
)

// channelEvidence: what the fleet says of each version a channel told its
// clusters, read through the shared evidence cache.
func (s *API) channelEvidence(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	name := e.Ans.Channel.Name
	list, err := s.ev.Of(c.Request().Context(), name)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	if want := c.QueryParam("version"); want != "" {
		rv, ok := v.Snap.Reported(name, want)
		if !ok {
			return core.InvalidParam("version", "%q is not a version of channel %q's source", want, name)
		}
		for _, ev := range list {
			if ev.Version == rv.String() {
				return c.JSON(http.StatusOK, evidenceview.JSON(ev))
			}
		}
		return c.JSON(http.StatusOK, openapi.Evidence{Version: rv.String()})
	}
	list = evidenceview.Indexed(v, e.Ans.Channel.Source, list)
	out := make([]openapi.Evidence, 0, len(list))
	for _, ev := range list {
		out = append(out, evidenceview.JSON(ev))
	}
	return c.JSON(http.StatusOK, openapi.EvidenceList{Versions: out})
}
