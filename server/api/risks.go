package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

// registerRisks adds the known-risk routes (CONTRACT section 13). A risk
// speaks for every channel of its source, so declaring one needs a token
// not limited to channels, as a block does.
func (s *API) registerRisks(e *echo.Echo) {
	promote := s.RequireScope(core.ScopePromote)
	s.Get(e, "/api/v1/sources/:source/risks", s.listRisks)
	e.PUT("/api/v1/sources/:source/risks/:risk", s.putRisk, s.DBDeadline, promote)
	e.DELETE("/api/v1/sources/:source/risks/:risk", s.deleteRisk, s.DBDeadline, promote)
}

func (s *API) listRisks(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	risks, err := v.Snap.Risks(core.PathParam(c, "source"))
	if err != nil {
		return core.BadParam("source", err)
	}
	out := openapi.RiskList{Risks: make([]openapi.Risk, len(risks))}
	base := core.BaseURL(s.Opts.ExternalURL, c.Request())
	for i := range risks {
		out.Risks[i] = core.RiskJSON(&risks[i], base)
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *API) putRisk(c echo.Context) error {
	source, err := s.SourceParam(c)
	if err != nil {
		return err
	}
	var req openapi.RiskRequest
	if err := core.DecodeBody(c, &req, true); err != nil {
		return err
	}
	r := catalog.Risk{Source: source, Name: core.PathParam(c, "risk"), Message: req.Message, URL: req.URL,
		From: req.From, To: req.To, Clusters: req.Clusters}
	if err := r.Compile(); err != nil {
		var fe *catalog.FieldError
		if errors.As(err, &fe) {
			return core.BadParam(fe.Field, fmt.Errorf("%w: risk %s", err, fe.Field))
		}
		return err
	}
	ctx := c.Request().Context()
	if r, err = s.Opts.Store.PutRisk(ctx, r, core.Actor(c)); err != nil {
		return fmt.Errorf("risk %q of %q: %w", r.Name, source, err)
	}
	if err := s.reloadAfterWrite(ctx, snapshot.Change{Source: source}); err != nil {
		return fmt.Errorf("%w: risk %q of %q is declared, but this replica could not reload it yet: %w", resolver.ErrUnavailable, r.Name, source, err)
	}
	return c.JSON(http.StatusOK, core.RiskJSON(&r, core.BaseURL(s.Opts.ExternalURL, c.Request())))
}

func (s *API) deleteRisk(c echo.Context) error {
	source, err := s.SourceParam(c)
	if err != nil {
		return err
	}
	name := core.PathParam(c, "risk")
	reason, err := core.ReasonOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.Opts.Store.DeleteRisk(ctx, source, name, core.Actor(c), reason); err != nil {
		return core.BadParam("risk", fmt.Errorf("remove risk %q of %q: %w", name, source, err))
	}
	if err := s.reloadAfterWrite(ctx, snapshot.Change{Source: source}); err != nil {
		return fmt.Errorf("%w: risk %q of %q is removed, but this replica could not reload it yet: %w", resolver.ErrUnavailable, name, source, err)
	}
	return c.NoContent(http.StatusNoContent)
}
