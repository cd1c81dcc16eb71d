package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/lineview"
)

// Version lists change only when a scan lands (minutes apart), so a short
// shared cache is harmless and absorbs dashboards polling in a loop.
const listCacheControl = "public, max-age=15"

func (s *API) listSources(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	views := v.Snap.Sources()
	out := make([]openapi.Source, 0, len(views))
	for _, sv := range views {
		out = append(out, core.SourceJSON(sv))
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *API) getSource(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	sv, err := v.Snap.SourceInfo(core.PathParam(c, "source"))
	if err != nil {
		return core.ParamIf("source", resolver.ErrNotFound, err)
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, core.SourceJSON(sv))
}

// listUnparsed shows the tags kept but never served, with why, so that an
// operator can fix a build pattern or an exclude.
func (s *API) listUnparsed(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	tags, err := v.Snap.Unparsed(core.PathParam(c, "source"))
	if err != nil {
		return core.ParamIf("source", resolver.ErrNotFound, err)
	}
	out := make([]openapi.Unparsed, 0, len(tags))
	for _, t := range tags {
		out = append(out, openapi.Unparsed{Tag: t.Name, Error: t.ParseError(), Digest: core.StrOrNil(t.Digest.String()), FirstSeen: t.FirstSeen.UTC()})
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *API) listVersions(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	q := c.QueryParams()
	// No stream asked: every version that parses, which is what testing serves.
	stream := resolver.Testing
	// An empty value is no value: clients fill templates like ?stream=&constraint=.
	if q.Get("stream") != "" {
		if stream, err = resolver.ParseStream(q.Get("stream")); err != nil {
			return core.BadParam("stream", err)
		}
	}
	source := core.PathParam(c, "source")
	vs, err := v.Snap.Versions(source, stream, q.Get("constraint"))
	if err != nil {
		if errors.Is(err, resolver.ErrInvalid) {
			return core.BadParam("constraint", err)
		}
		return core.ParamIf("source", resolver.ErrNotFound, err)
	}
	out := make([]openapi.Version, 0, len(vs))
	for _, vv := range vs {
		j := core.VersionJSON(vv)
		j.Lifecycle = lineview.LineJSON(v.Snap.Lines().LineOf(source, vv.Version))
		out = append(out, j)
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

// getVersion accepts a canonical version or a raw tag, with "+" sent raw or
// as %2B.
func (s *API) getVersion(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	source := core.PathParam(c, "source")
	vv, err := v.Snap.Version(source, core.PathParam(c, "version"))
	if err != nil {
		return core.ParamIf("version", resolver.ErrNotFound, err)
	}
	j := core.VersionJSON(vv)
	j.Lifecycle = lineview.LineJSON(v.Snap.Lines().LineOf(source, vv.Version))
	if hs, ok := s.Opts.Store.(heldStore); ok {
		// A yank's hold is in the database, not the snapshot; the version
		// is still answered, without it, when the database is away.
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
		holds, err := hs.VersionHolds(ctx, source)
		cancel()
		if err != nil {
			s.Log.WarnContext(c.Request().Context(), "reading version holds failed; answering without them", "source", source, "err", err)
		} else if _, held := holds[vv.Version.String()]; held {
			j.Held = &openapi.Held{Reason: "evidence"}
		}
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, j)
}

// heldStore lists the versions a yank holds (*store.Store).
type heldStore interface {
	VersionHolds(ctx context.Context, source string) (map[string]string, error)
}

// resolve is the dry-run upgrade answer. Unknown query parameters are
// ignored; a bad value of a known one is a 400 naming it.
func (s *API) resolve(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	a, err := core.ResolveQuery(v, c.QueryParams(), core.BaseURL(s.Opts.ExternalURL, c.Request()))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", core.ChannelCacheControl)
	return c.JSON(http.StatusOK, a)
}
