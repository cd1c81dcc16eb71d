package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/capi"
	"github.com/tidemark-dev/tidemark/server/registryview"
)

// Handler is the whole HTTP surface.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve serves on ln until ctx ends, then stops accepting, waits for
// in-flight requests (up to ShutdownTimeout) and returns. One cancellation
// is enough: there is no second-signal dance.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: min(maxHeaderWait, s.opts.ReadTimeout),
		ReadTimeout:       s.opts.ReadTimeout,
		WriteTimeout:      s.opts.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.log.Info("shutting down: draining in-flight requests", "timeout", s.opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
		return fmt.Errorf("drain %s: %w", ln.Addr(), err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// routes registers every route; the drift test checks this list against
// openapi/openapi.yaml both ways.
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.observe)

	s.get(e, "/healthz", s.healthz)
	s.get(e, "/readyz", s.readyz)
	s.get(e, "/metrics", echo.WrapHandler(s.metrics.handler))
	s.get(e, "/openapi.yaml", s.spec)

	s.get(e, "/", s.rootOrConsole)
	s.get(e, "/v1-release", s.root)
	s.get(e, "/api/v1", s.root)

	s.get(e, "/v1-release/channels", s.releaseChannels)
	s.get(e, "/v1-release/channels/:name", s.releaseChannel)
	// channelserver clients also ask for the singular.
	s.get(e, "/v1-release/channel/:name", s.releaseChannel)

	s.get(e, "/api/v1/channels", s.listChannels)
	s.get(e, "/api/v1/channels/:name", s.getChannel)
	s.get(e, "/api/v1/channels/:name/releases", s.channelReleases)
	s.get(e, "/api/v1/sources", s.listSources)
	s.get(e, "/api/v1/sources/:source", s.getSource)
	s.get(e, "/api/v1/sources/:source/versions", s.listVersions)
	s.get(e, "/api/v1/sources/:source/versions/:version", s.getVersion)
	s.get(e, "/api/v1/sources/:source/unparsed", s.listUnparsed)
	s.get(e, "/api/v1/resolve", s.resolve)
	s.get(e, "/api/upgrades_info/v1/graph", s.graph)
	hooks := &capi.Hooks{Sources: s.opts.ClusterAPI, Answered: s.metrics.capiAnswer, Snapshot: func() *resolver.Snapshot {
		if v := s.cur.Load(); v != nil {
			return v.snap
		}
		return nil
	}}
	hooks.Register(e)
	rv := s.opts.RegistryView
	rv.Snapshot = hooks.Snapshot
	rv.Authenticate = s.viewAuthenticate
	rv.Observe = s.metrics.registryView
	registryview.New(rv).Register(e)

	s.registerWrites(e)
	s.registerGovernance(e)
	s.registerSignIn(e)
	s.registerFleet(e)
	s.registerRollouts(e)
	s.registerUI(e)
	s.registerWebhooks(e)
	return e
}
