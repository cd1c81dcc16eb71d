package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/api"
	"github.com/tidemark-dev/tidemark/server/capi"
	"github.com/tidemark-dev/tidemark/server/connlimit"
	"github.com/tidemark-dev/tidemark/server/console"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/evidenceview"
	"github.com/tidemark-dev/tidemark/server/registryview"
	"github.com/tidemark-dev/tidemark/server/tufview"
)

// Handler is the whole HTTP surface.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve serves on ln until ctx ends, then stops accepting, waits for
// in-flight requests (up to ShutdownTimeout) and returns. One cancellation
// is enough: there is no second-signal dance.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	limits := s.Opts.Connections
	limits.Exempt = append(limits.Exempt, s.Opts.TrustedProxies...)
	cl := connlimit.Wrap(ln, limits, s.conns)
	ln = cl
	hs := &http.Server{
		Handler:           s.echo,
		ConnState:         cl.ConnState, // which connections may yield at the limit
		ReadHeaderTimeout: min(core.MaxHeaderWait, s.Opts.ReadTimeout),
		ReadTimeout:       s.Opts.ReadTimeout,
		WriteTimeout:      s.Opts.WriteTimeout,
		IdleTimeout:       s.Opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.Log.Info("shutting down: draining in-flight requests", "timeout", s.Opts.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Opts.ShutdownTimeout)
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
	e.HTTPErrorHandler = s.HandleError
	e.Use(s.Observe)

	s.Get(e, "/healthz", s.Healthz)
	s.Get(e, "/readyz", s.Readyz)
	s.Get(e, "/metrics", echo.WrapHandler(s.Metrics.Handler))
	s.Get(e, "/openapi.yaml", s.Spec)

	s.Get(e, "/v1-release", s.Root)
	s.Get(e, "/api/v1", s.Root)

	s.Get(e, "/v1-release/channels", s.releaseChannels)
	s.Get(e, "/v1-release/channels/:name", s.releaseChannel)
	// channelserver clients also ask for the singular.
	s.Get(e, "/v1-release/channel/:name", s.releaseChannel)

	s.Get(e, "/api/upgrades_info/v1/graph", s.graph)
	hooks := &capi.Hooks{Sources: s.Opts.ClusterAPI, Answered: s.Metrics.CapiAnswer, Snapshot: func() *snapshot.Snapshot {
		if v := s.Cur.Load(); v != nil {
			return v.Snap
		}
		return nil
	}}
	hooks.Register(e)
	rv := s.Opts.RegistryView
	rv.Snapshot = hooks.Snapshot
	rv.Authenticate = s.ViewAuthenticate
	rv.Observe = s.Metrics.RegistryView
	rv.Active = s.FleetRec.ActiveServed
	registryview.New(rv).Register(e)
	(&tufview.View{Store: s.Opts.TUF}).Register(func(p string, h echo.HandlerFunc) { s.Get(e, p, h) })

	ev := evidenceview.New(s.Server)
	api.Register(e, s.Server, ev)
	console.Register(e, s.Server, ev)
	return e
}
