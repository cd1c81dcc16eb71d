// Package server is Tidemark's HTTP face, put together: server.New builds
// the shared core (server/core) and registers every audience's routes on
// it. The release protocol (channel URLs for system-upgrade-controller and
// channelserver clients, the Cincinnati update graph) lives here; the JSON
// API, the console, Cluster API's hooks and the registry view are packages
// of their own under server/.
//
// The running service (reloads, leader loops, the fleet flusher) is not
// here: internal/service runs it with this package's Server as its HTTP.
package server

import (
	"fmt"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/server/connlimit"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/lineview"
)

// The core's types and constants that callers of server.New name.
type (
	Options           = core.Options
	RolloutOptions    = core.RolloutOptions
	RolloutStore      = core.RolloutStore
	Store             = core.Store
	Governance        = core.Governance
	ScanFunc          = core.ScanFunc
	GateFunc          = core.GateFunc
	PushFunc          = core.PushFunc
	NotificationsFunc = core.NotificationsFunc
)

// Scopes and access-log modes, as core defines them.
const (
	ScopeRead       = core.ScopeRead
	ScopeScan       = core.ScopeScan
	ScopePromote    = core.ScopePromote
	ScopeAdmin      = core.ScopeAdmin
	AccessLogSample = core.AccessLogSample
	AccessLogAll    = core.AccessLogAll
	AccessLogOff    = core.AccessLogOff
)

// ErrRateLimited is core.ErrRateLimited.
var ErrRateLimited = core.ErrRateLimited

// Server is the core with every audience's routes.
type Server struct {
	*core.Server
	echo  *echo.Echo
	conns *connlimit.Metrics
	// forced is tidemark_lifecycle_forced_total (lifecycle.go).
	forced *prometheus.CounterVec
}

// New builds a server with no snapshot yet: /readyz answers 503 and data
// routes 503 until the first successful Reload.
func New(opts Options) (*Server, error) {
	c, err := core.New(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{Server: c}
	if s.conns, err = connlimit.NewMetrics(c.Opts.Metrics); err != nil {
		return nil, fmt.Errorf("register connection metrics: %w", err)
	}
	if err := c.Opts.Metrics.Register(lineview.NewCollector(c)); err != nil {
		return nil, fmt.Errorf("register lifecycle metrics: %w", err)
	}
	if s.forced, err = newForced(c.Opts.Metrics); err != nil {
		return nil, fmt.Errorf("register lifecycle metrics: %w", err)
	}
	s.echo = s.routes()
	return s, nil
}
