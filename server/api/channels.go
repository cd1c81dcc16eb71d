package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/server/core"
)

func (s *API) listChannels(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	out := make([]openapi.Channel, 0, len(v.List))
	for _, e := range v.List {
		out = append(out, core.ChannelJSON(e))
	}
	c.Response().Header().Set("Cache-Control", core.ChannelCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *API) getChannel(c echo.Context) error {
	_, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", core.ChannelCacheControl)
	return core.SendChannel(c, e)
}
