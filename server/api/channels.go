package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

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
		j := core.ChannelJSON(e)
		s.promotionWaiting(c, v, e, &j)
		out = append(out, j)
	}
	c.Response().Header().Set("Cache-Control", core.ChannelCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *API) getChannel(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", core.ChannelCacheControl)
	if e.Ans.Channel.Promote == nil {
		return core.SendChannel(c, e)
	}
	// Why a promotion waits moves with the clock and the fleet, not with
	// the channel: its ETag names it too.
	j, etag := e.ChannelAt(time.Now())
	s.promotionWaiting(c, v, e, &j)
	if j.Promotion.Waiting != nil {
		sum := sha256.Sum256([]byte(*j.Promotion.Waiting))
		etag = strings.TrimSuffix(etag, `"`) + "-" + hex.EncodeToString(sum[:4]) + `"`
	}
	c.Response().Header().Set("ETag", etag)
	if core.ETagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, j)
}

// promotionWaiting fills j's promotion.waiting: why e's promotion waits,
// as the leader's loop would say it.
func (s *API) promotionWaiting(c echo.Context, v *core.View, e *core.Entry, j *openapi.Channel) {
	if j.Promotion == nil {
		return
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
	defer cancel()
	_, why, _ := s.ev.Promotion(ctx, v, e)
	j.Promotion.Waiting = core.StrOrNil(why)
}
