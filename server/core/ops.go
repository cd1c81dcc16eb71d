package core

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
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
	// A registry that is down leaves the replica ready (it serves what was
	// indexed), but the body says so: "ok" alone read as all is well.
	var failed []string
	snap := s.Cur.Load().Snap
	for i := range snap.NumSources() {
		if why := ScanFailed(snap.SourceAt(i)); why != "" {
			failed = append(failed, why)
		}
	}
	if len(failed) > 0 {
		return c.String(http.StatusOK, "ok, serving what was indexed before: "+strings.Join(failed, "; ")+"\n")
	}
	return c.String(http.StatusOK, "ok\n")
}

// ScanFailed says that sv's last scan failed, when and why ("" when it did
// not): a channel that answers nothing, and /readyz, name it.
func ScanFailed(sv snapshot.SourceView) string {
	l := sv.LastScan
	if l == nil || l.Outcome != "failed" {
		return ""
	}
	at := l.Finished
	if at.IsZero() {
		at = l.Started
	}
	return fmt.Sprintf("source %q's last scan failed at %s: %s", sv.Source.Name, at.UTC().Format(time.RFC3339), l.Error)
}

func (s *Server) Spec(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", openapi.Spec)
}
