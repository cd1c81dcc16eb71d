package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

const defaultNotificationsLimit = 100

// notifications answers GET /api/v1/notifications (scope read, promote or
// admin: the events name channels and actors).
func (s *API) notifications(c echo.Context) error {
	if s.Opts.Notifications == nil {
		return fmt.Errorf("%w: notifications need the database, which this server was started without", resolver.ErrUnavailable)
	}
	limit := defaultNotificationsLimit
	if q := c.QueryParam("limit"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 || n > 1000 {
			return core.InvalidParam("limit", "limit %q: want a whole number from 1 to 1000", q)
		}
		limit = n
	}
	res, err := s.Opts.Notifications(c.Request().Context(), limit)
	if err != nil {
		return fmt.Errorf("list notifications: %w", err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, res)
}
