package core

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
)

// Root answers GET /, /v1-release and /api/v1 with the same links, so a
// person or a client that starts at the server's address finds its way
// (they were 404). It needs no snapshot: the links hold before one loads.
func (s *Server) Root(c echo.Context) error {
	base := BaseURL(s.Opts.ExternalURL, c.Request())
	return c.JSON(http.StatusOK, openapi.Root{Links: map[string]string{
		"self":       base + c.Request().URL.Path,
		"v1-release": base + "/v1-release/channels",
		"channels":   base + "/api/v1/channels",
		"sources":    base + "/api/v1/sources",
		"resolve":    base + "/api/v1/resolve",
		"openapi":    base + "/openapi.yaml",
		"healthz":    base + "/healthz",
		"readyz":     base + "/readyz",
		"metrics":    base + "/metrics",
		"fleet":      base + "/api/v1/fleet",
		"console":    base + "/ui/",
	}})
}
