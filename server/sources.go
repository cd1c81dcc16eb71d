package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Version lists change only when a scan lands (minutes apart), so a short
// shared cache is harmless and absorbs dashboards polling in a loop.
const listCacheControl = "public, max-age=15"

func (s *Server) listSources(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	views := v.snap.Sources()
	out := make([]openapi.Source, 0, len(views))
	for _, sv := range views {
		out = append(out, sourceJSON(sv))
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getSource(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	sv, err := v.snap.SourceInfo(pathParam(c, "source"))
	if err != nil {
		return paramIf("source", resolver.ErrNotFound, err)
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, sourceJSON(sv))
}

// listUnparsed shows the tags kept but never served, with why, so that an
// operator can fix a build pattern or an exclude.
func (s *Server) listUnparsed(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	tags, err := v.snap.Unparsed(pathParam(c, "source"))
	if err != nil {
		return paramIf("source", resolver.ErrNotFound, err)
	}
	out := make([]openapi.Unparsed, 0, len(tags))
	for _, t := range tags {
		out = append(out, openapi.Unparsed{Tag: t.Name, Error: t.Error, Digest: strOrNil(t.Digest), FirstSeen: t.FirstSeen.UTC()})
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

func (s *Server) listVersions(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	q := c.QueryParams()
	// No stream asked: every version that parses, which is what testing serves.
	stream := resolver.Testing
	// An empty value is no value: clients fill templates like ?stream=&constraint=.
	if q.Get("stream") != "" {
		if stream, err = resolver.ParseStream(q.Get("stream")); err != nil {
			return badParam("stream", err)
		}
	}
	source := pathParam(c, "source")
	vs, err := v.snap.Versions(source, stream, q.Get("constraint"))
	if err != nil {
		if errors.Is(err, resolver.ErrInvalid) {
			return badParam("constraint", err)
		}
		return paramIf("source", resolver.ErrNotFound, err)
	}
	out := make([]openapi.Version, 0, len(vs))
	for _, vv := range vs {
		out = append(out, versionJSON(vv))
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}

// getVersion accepts a canonical version or a raw tag, with "+" sent raw or
// as %2B.
func (s *Server) getVersion(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	vv, err := v.snap.Version(pathParam(c, "source"), pathParam(c, "version"))
	if err != nil {
		return paramIf("version", resolver.ErrNotFound, err)
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, versionJSON(vv))
}

// resolve is the dry-run upgrade answer. Unknown query parameters are
// ignored; a bad value of a known one is a 400 naming it.
func (s *Server) resolve(c echo.Context) error {
	v, err := s.view()
	if err != nil {
		return err
	}
	a, err := resolveQuery(v, c.QueryParams(), baseURL(s.opts.ExternalURL, c.Request()))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", channelCacheControl)
	return c.JSON(http.StatusOK, a)
}

// resolveQuery is the answer to a resolve query q, as the API answers it
// and the console's resolve form shows it.
// base prefixes the URL of a risk declared without one.
func resolveQuery(v *view, q url.Values, base string) (openapi.ResolveAnswer, error) {
	query := resolver.Query{
		Source:  q.Get("source"),
		Current: q.Get("current"),
		Channel: q.Get("channel"),
		Target:  q.Get("target"),
		Cluster: q.Get("cluster"),
	}
	if len(query.Cluster) > 128 {
		return openapi.ResolveAnswer{}, invalidParam("cluster", "%d bytes, at most 128", len(query.Cluster))
	}
	if ar := q.Get("accept_risks"); ar != "" {
		if len(ar) > 4096 {
			return openapi.ResolveAnswer{}, invalidParam("accept_risks", "%d bytes, at most 4096", len(ar))
		}
		query.AcceptRisks = strings.Split(ar, ",")
	}
	if query.Channel != "" {
		// A channel names its source; asking for both is allowed but not needed.
		e, err := v.channel(query.Channel)
		if err != nil {
			return openapi.ResolveAnswer{}, badParam("channel", err)
		}
		switch src := e.ans.Channel.Source; {
		case query.Source == "":
			query.Source = src
		case query.Source != src:
			return openapi.ResolveAnswer{}, invalidParam("channel", "channel %q follows source %q, not %q", query.Channel, src, query.Source)
		}
	}
	if query.Source == "" {
		return openapi.ResolveAnswer{}, invalidParam("source", "source is required (or a channel, which names its source)")
	}
	if _, err := v.snap.SourceInfo(query.Source); err != nil {
		return openapi.ResolveAnswer{}, badParam("source", err)
	}
	if query.Current == "" {
		return openapi.ResolveAnswer{}, invalidParam("current", "current is required")
	}
	if q.Get("stream") != "" {
		if query.Channel != "" {
			return openapi.ResolveAnswer{}, invalidParam("stream", "give stream or channel, not both")
		}
		st, err := resolver.ParseStream(q.Get("stream"))
		if err != nil {
			return openapi.ResolveAnswer{}, badParam("stream", err)
		}
		query.Stream = &st
	}
	if q.Get("builds") != "" {
		b, err := strconv.ParseBool(q.Get("builds"))
		if err != nil {
			return openapi.ResolveAnswer{}, invalidParam("builds", "builds %q is not a boolean", q.Get("builds"))
		}
		query.Builds = b
	}
	a, err := v.snap.Resolve(query)
	switch {
	case err == nil:
	case errors.Is(err, resolver.ErrNotFound): // source and channel are known: the target is not
		return openapi.ResolveAnswer{}, badParam("target", err)
	case errors.Is(err, resolver.ErrInvalid):
		if strings.Contains(query.Current, " ") {
			// A raw "+" in a query string decodes as a space.
			err = fmt.Errorf("%w (send a \"+\" in a query string as %%2B, or use the tag spelling with \"-\")", err)
		}
		return openapi.ResolveAnswer{}, badParam("current", err)
	default:
		return openapi.ResolveAnswer{}, fmt.Errorf("resolve %s from %q: %w", query.Source, query.Current, err)
	}
	return resolveJSON(a, base), nil
}

// paramIf names param in err when err is of kind sentinel: a not-found
// source or version is about that path parameter.
func paramIf(param string, sentinel, err error) error {
	if errors.Is(err, sentinel) {
		return badParam(param, err)
	}
	return err
}
