package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/lineview"
)

// Fleet pages: 100 clusters unless asked, at most 1000.
const (
	defaultFleetLimit = 100
	maxFleetLimit     = 1000
)

// registerFleet adds the fleet reads (CONTRACT section 5). They need a
// token (scope read, promote or admin): cluster IDs are customer data.
func (s *API) registerFleet(e *echo.Echo) {
	read := s.RequireRead()
	s.Get(e, "/api/v1/fleet", s.fleetSummary, s.DBDeadline, s.fleetAvailable, read)
	s.Get(e, "/api/v1/fleet/clusters", s.fleetClusters, s.DBDeadline, s.fleetAvailable, read)
	s.Get(e, "/api/v1/fleet/clusters/:id", s.fleetCluster, s.DBDeadline, s.fleetAvailable, read)
	s.Get(e, "/api/v1/channels/:name/evidence", s.channelEvidence, s.DBDeadline, s.fleetAvailable, read)
}

func (s *API) fleetAvailable(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.Opts.Fleet.Store == nil {
			return s.WriteUnavailable(c)
		}
		return next(c)
	}
}

// fleetChannel is the ?channel= of a fleet read: required, and configured.
func (s *API) fleetChannel(c echo.Context) (*core.View, string, error) {
	name := c.QueryParam("channel")
	if name == "" {
		return nil, "", core.InvalidParam("channel", "channel is required: ?channel=<name>")
	}
	v, err := s.View()
	if err != nil {
		return nil, "", err
	}
	if _, err := v.Channel(name); err != nil {
		return nil, "", core.BadParam("channel", fmt.Errorf("%w: channel %q", resolver.ErrNotFound, name))
	}
	return v, name, nil
}

func (s *API) fleetSummary(c echo.Context) error {
	v, name, err := s.fleetChannel(c)
	if err != nil {
		return err
	}
	sum, err := s.FleetSummaryOf(c.Request().Context(), v, name)
	if err != nil {
		return err
	}
	sum.Lifecycle = lineview.Summary(v, name, sum.Versions)
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, sum)
}

func (s *API) fleetClusters(c echo.Context) error {
	v, name, versions, err := s.fleetFilter(c)
	if err != nil {
		return err
	}
	q := resolver.ClusterQuery{Channel: name, Versions: versions, Limit: defaultFleetLimit, After: c.QueryParam("after"),
		Since: time.Now().Add(-s.FleetRec.ActiveWindow())}
	if ver := c.QueryParam("version"); ver != "" {
		// Records keep canonical versions; a tag asks for its version.
		q.Version = ver
		if rv, ok := v.Snap.Reported(name, ver); ok {
			q.Version = rv.String()
		}
	}
	if st := c.QueryParam("stale"); st != "" {
		if q.Stale, err = strconv.ParseBool(st); err != nil {
			return core.InvalidParam("stale", "stale %q: want true or false", st)
		}
	}
	if l := c.QueryParam("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxFleetLimit {
			return core.InvalidParam("limit", "limit %q: want 1 to %d", l, maxFleetLimit)
		}
		q.Limit = n
	}
	page, next, err := s.Opts.Fleet.Store.FleetClusters(c.Request().Context(), q)
	if err != nil {
		return err
	}
	out := openapi.FleetClusterPage{Clusters: clustersJSON(page), Next: core.StrOrNil(next)}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}

func (s *API) fleetCluster(c echo.Context) error {
	id := core.PathParam(c, "id")
	recs, err := s.Opts.Fleet.Store.FleetCluster(c.Request().Context(), id)
	if err != nil {
		return core.BadParam("id", err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, openapi.FleetClusterChannels{ID: id, Channels: clustersJSON(recs)})
}

func clustersJSON(recs []resolver.ClusterRecord) []openapi.FleetCluster {
	out := make([]openapi.FleetCluster, len(recs))
	for i, r := range recs {
		out[i] = openapi.FleetCluster{
			ID: r.ID, Channel: r.Channel, Reported: core.StrOrNil(r.Reported), ReportedSince: openapi.TimeOrNil(r.ReportedSince),
			Served: core.StrOrNil(r.Served), Directed: core.StrOrNil(r.Directed), FirstSeen: r.FirstSeen.UTC(), LastSeen: r.LastSeen.UTC(),
			Enrolled: r.Enrolled, Forced: r.Forced,
		}
	}
	return out
}
