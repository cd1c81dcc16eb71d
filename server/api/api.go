// Package api is Tidemark's JSON API under /api/v1 (CONTRACT sections 3
// to 15): channels, sources and versions, resolve, the writes of release
// engineering (pins, blocks, scans, risks), history, scheduled changes and
// freezes, the fleet, rollouts and their controls, Alertmanager's webhook,
// the registries' webhooks and the notification status.
//
// Handlers bind, ask the snapshot (resolver) or the store, and encode the
// wire types of package openapi; the error table, auth and the shapes the
// console shares are server/core's.
package api

import (
	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/evidenceview"
)

// API is the JSON API's handlers, on the shared core.
type API struct {
	*core.Server
	ev *evidenceview.Reader
}

// Register adds every route of the JSON API to e.
func Register(e *echo.Echo, c *core.Server, ev *evidenceview.Reader) {
	s := &API{Server: c, ev: ev}
	s.Get(e, "/api/v1/channels", s.listChannels)
	s.Get(e, "/api/v1/channels/:name", s.getChannel)
	s.Get(e, "/api/v1/channels/:name/releases", s.channelReleases)
	s.Get(e, "/api/v1/sources", s.listSources)
	s.Get(e, "/api/v1/sources/:source", s.getSource)
	s.Get(e, "/api/v1/sources/:source/versions", s.listVersions)
	s.Get(e, "/api/v1/sources/:source/versions/:version", s.getVersion)
	s.Get(e, "/api/v1/sources/:source/unparsed", s.listUnparsed)
	s.Get(e, "/api/v1/sources/:source/lifecycle", s.sourceLifecycle, s.DBDeadline)
	s.Get(e, "/api/v1/resolve", s.resolve)
	s.Get(e, "/api/v1/status", s.status, s.RequireRead())
	s.registerWrites(e)
	s.registerGovernance(e)
	s.registerFleet(e)
	s.registerEnrollments(e)
	s.registerRollouts(e)
	s.registerWebhooks(e)
}
