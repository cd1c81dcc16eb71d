package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/server/core"
)

// registerEnrollments adds the enrolled clusters' routes
// (fleet.enrollment): an admin enrolls a cluster, getting its key once,
// and revokes it.
func (s *API) registerEnrollments(e *echo.Echo) {
	admin := s.RequireScope(core.ScopeAdmin)
	e.POST("/api/v1/fleet/enrollments", s.enroll, s.DBDeadline, admin)
	e.DELETE("/api/v1/fleet/enrollments/:id", s.revokeEnrollment, s.DBDeadline, admin)
}

func (s *API) enroll(c echo.Context) error {
	if s.Opts.Enroller == nil {
		return s.WriteUnavailable(c)
	}
	var req openapi.EnrollmentRequest
	if err := core.DecodeBody(c, &req, true); err != nil {
		return err
	}
	v, err := s.View()
	if err != nil {
		return err
	}
	for _, ch := range req.Channels {
		if v.Entry(ch) == nil {
			return core.InvalidParam("channels", "no channel %q", ch)
		}
	}
	key, err := s.Opts.Enroller.Enroll(c.Request().Context(), req.ID, req.Channels)
	if err != nil {
		return core.BadParam("id", err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusCreated, openapi.Enrollment{ID: req.ID, Key: key,
		URLs: EnrolledURLs(core.BaseURL(s.Opts.ExternalURL, c.Request()), key, req.Channels)})
}

func (s *API) revokeEnrollment(c echo.Context) error {
	if s.Opts.Enroller == nil {
		return s.WriteUnavailable(c)
	}
	id := core.PathParam(c, "id")
	if err := s.Opts.Enroller.RevokeEnrollment(c.Request().Context(), id); err != nil {
		return core.BadParam("id", err)
	}
	return c.NoContent(http.StatusNoContent)
}

// EnrolledURLs are the channel URLs carrying key, one per channel, under
// base (the service's external URL): what a Plan's spec.channel holds.
func EnrolledURLs(base, key string, channels []string) []string {
	out := make([]string, 0, len(channels))
	for _, ch := range channels {
		out = append(out, strings.TrimRight(base, "/")+"/v1-release/channels/"+url.PathEscape(ch)+"?key="+url.QueryEscape(key))
	}
	return out
}
