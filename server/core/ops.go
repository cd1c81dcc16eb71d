package core

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
)

// Healthz says the process is up; it never looks at data or the database,
// so a database outage does not get healthy pods restarted.
func (s *Server) Healthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok\n")
}

// Readyz is 503 until a snapshot is loaded. After that it stays 200, since
// the snapshot can answer every read; the body says "degraded" and why when
// the last reload failed.
func (s *Server) Readyz(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	if s.Cur.Load() == nil {
		return c.String(http.StatusServiceUnavailable, "not ready: no snapshot loaded yet\n")
	}
	if why := s.snaps.Degraded(); why != "" {
		return c.String(http.StatusOK, "degraded: "+why+"\n")
	}
	return c.String(http.StatusOK, "ok\n")
}

func (s *Server) Spec(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openapi.Spec)
}
