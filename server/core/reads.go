package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// DBDeadline bounds the database work of a request: a database that
// accepts connections but never answers must cost a request DBTimeout and
// a 503 (the store maps the expired deadline to ErrUnavailable), never a
// hung client. The reload after a write has its own bound.
func (s *Server) DBDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.Opts.DBTimeout)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

func (s *Server) WriteUnavailable(c echo.Context) error {
	method := c.Request().Method
	if method == http.MethodHead {
		method = http.MethodGet // HEAD answers as GET does, to the byte count
	}
	return fmt.Errorf("%w: %s %s needs the database, which this server was started without", resolver.ErrUnavailable, method, c.Path())
}

// ChannelHistory is e's audit history as the API answers it; the console
// shows the same. The caller has checked that there is a store.
func (s *Server) ChannelHistory(ctx context.Context, e *Entry) ([]openapi.AuditEvent, error) {
	events, err := s.Opts.Store.ChannelHistory(ctx, e.Ans.Channel.Name, e.Ans.Channel.Source)
	if err != nil {
		return nil, fmt.Errorf("history of %q: %w", e.Ans.Channel.Name, err)
	}
	out := make([]openapi.AuditEvent, 0, len(events))
	for _, ev := range events {
		out = append(out, openapi.AuditEvent{At: ev.At.UTC(), Actor: ev.Actor, Action: ev.Action,
			From: StrOrNil(ev.From), To: StrOrNil(ev.To), Reason: ev.Reason})
	}
	return out, nil
}

func (s *Server) GovernanceStore() (Governance, error) {
	if s.Opts.Governance == nil {
		return nil, fmt.Errorf("%w: scheduled changes, approvals and freezes need the database, which this server was started without", resolver.ErrUnavailable)
	}
	return s.Opts.Governance, nil
}

// RolloutWithCounts is e's rollout with the fleet's counts, as the API
// answers it and the console shows it. The caller has checked that there
// is a rollout store and that e has rolled out.
func (s *Server) RolloutWithCounts(ctx context.Context, e *Entry) (*openapi.Rollout, error) {
	rv := e.Ans.Rollout
	onTo, onFrom, err := s.Opts.Rollouts.Store.RolloutClusters(ctx, rv.Channel, rv.From, rv.To)
	if err != nil {
		return nil, fmt.Errorf("rollout of %q: %w", rv.Channel, err)
	}
	return RolloutJSON(&rv.Rollout, rv.Progress(time.Now()), &openapi.RolloutClusters{To: onTo, From: onFrom}), nil
}

// FleetSummaryOf is channel's fleet summary as the API answers it and the
// console charts it. The caller has checked that there is a fleet store.
func (s *Server) FleetSummaryOf(ctx context.Context, v *View, channel string) (openapi.FleetSummary, error) {
	sum, err := s.Opts.Fleet.Store.FleetSummary(ctx, channel, time.Now().Add(-s.FleetRec.ActiveWindow()))
	if err != nil {
		return openapi.FleetSummary{}, err
	}
	v.Snap.SortNewestFirst(channel, sum.Versions)
	v.Snap.SortNewestFirst(channel, sum.Served)
	return openapi.FleetSummary{
		Channel: sum.Channel, Clusters: sum.Clusters, Active: sum.Active,
		Versions: countsJSON(sum.Versions), Served: countsJSON(sum.Served),
	}, nil
}

// ResolveQuery is the answer to a resolve query q, as the API answers it
// and the console's resolve form shows it.
// base prefixes the URL of a risk declared without one.
func ResolveQuery(v *View, q url.Values, base string) (openapi.ResolveAnswer, error) {
	query := snapshot.Query{
		Source:  q.Get("source"),
		Current: q.Get("current"),
		Channel: q.Get("channel"),
		Target:  q.Get("target"),
		Cluster: q.Get("cluster"),
	}
	if len(query.Cluster) > 128 {
		return openapi.ResolveAnswer{}, InvalidParam("cluster", "%d bytes, at most 128", len(query.Cluster))
	}
	if ar := q.Get("accept_risks"); ar != "" {
		if len(ar) > 4096 {
			return openapi.ResolveAnswer{}, InvalidParam("accept_risks", "%d bytes, at most 4096", len(ar))
		}
		query.AcceptRisks = strings.Split(ar, ",")
	}
	if query.Channel != "" {
		// A channel names its source; asking for both is allowed but not needed.
		e, err := v.Channel(query.Channel)
		if err != nil {
			return openapi.ResolveAnswer{}, BadParam("channel", err)
		}
		switch src := e.Ans.Channel.Source; {
		case query.Source == "":
			query.Source = src
		case query.Source != src:
			return openapi.ResolveAnswer{}, InvalidParam("channel", "channel %q follows source %q, not %q", query.Channel, src, query.Source)
		}
	}
	if query.Source == "" {
		return openapi.ResolveAnswer{}, InvalidParam("source", "source is required (or a channel, which names its source)")
	}
	if _, err := v.Snap.SourceInfo(query.Source); err != nil {
		return openapi.ResolveAnswer{}, BadParam("source", err)
	}
	if query.Current == "" {
		return openapi.ResolveAnswer{}, InvalidParam("current", "current is required")
	}
	if q.Get("stream") != "" {
		if query.Channel != "" {
			return openapi.ResolveAnswer{}, InvalidParam("stream", "give stream or channel, not both")
		}
		st, err := resolver.ParseStream(q.Get("stream"))
		if err != nil {
			return openapi.ResolveAnswer{}, BadParam("stream", err)
		}
		query.Stream = &st
	}
	if q.Get("builds") != "" {
		b, err := strconv.ParseBool(q.Get("builds"))
		if err != nil {
			return openapi.ResolveAnswer{}, InvalidParam("builds", "builds %q is not a boolean", q.Get("builds"))
		}
		query.Builds = b
	}
	a, err := v.Snap.Resolve(query)
	switch {
	case err == nil:
	case errors.Is(err, resolver.ErrNotFound): // source and channel are known: the target is not
		return openapi.ResolveAnswer{}, BadParam("target", err)
	case errors.Is(err, resolver.ErrInvalid):
		if strings.Contains(query.Current, " ") {
			// A raw "+" in a query string decodes as a space.
			err = fmt.Errorf("%w (send a \"+\" in a query string as %%2B, or use the tag spelling with \"-\")", err)
		}
		return openapi.ResolveAnswer{}, BadParam("current", err)
	default:
		return openapi.ResolveAnswer{}, fmt.Errorf("resolve %s from %q: %w", query.Source, query.Current, err)
	}
	j := resolveJSON(a, base)
	if l := EndingLine(v.Snap.Lines().LineOf(a.Source, a.Current)); l != nil {
		// What a cluster running current is told (the Warning header).
		w := l.Warning(a.Current.String())
		j.Warning = &w
	}
	return j, nil
}

// ParamIf names param in err when err is of kind sentinel: a not-found
// source or version is about that path parameter.
func ParamIf(param string, sentinel, err error) error {
	if errors.Is(err, sentinel) {
		return BadParam(param, err)
	}
	return err
}

// Channel answers change on a pin or a block, and a block must reach
// upgrade controllers at their next poll, so no cache may serve a channel
// answer without asking again; the ETag keeps asking again cheap.
const ChannelCacheControl = "no-cache"

// ChannelParam is the current view and the channel its :name path
// parameter names, taken from that one view.
func (s *Server) ChannelParam(c echo.Context) (*View, *Entry, error) {
	v, err := s.View()
	if err != nil {
		return nil, nil, err
	}
	e, err := v.Channel(PathParam(c, "name"))
	if err != nil {
		return nil, nil, err
	}
	return v, e, nil
}

// SourceParam is the :source path parameter, which must name a configured
// source (else 404 naming it).
func (s *Server) SourceParam(c echo.Context) (string, error) {
	v, err := s.View()
	if err != nil {
		return "", err
	}
	source := PathParam(c, "source")
	if _, err := v.Snap.SourceInfo(source); err != nil {
		return "", BadParam("source", err)
	}
	return source, nil
}

func (v *View) Channel(name string) (*Entry, error) {
	e := v.entry(name)
	if e == nil {
		return nil, BadParam("name", fmt.Errorf("%w: channel %q", resolver.ErrNotFound, name))
	}
	return e, nil
}

// PathParam returns a path parameter decoded. Echo routes on the raw path
// when the client escaped something (a version's "+" sent as %2B), and then
// leaves the parameter escaped.
func PathParam(c echo.Context, name string) string {
	p := c.Param(name)
	if strings.IndexByte(p, '%') < 0 {
		return p
	}
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// SendChannel sends the channel object with its ETag, or 304.
func SendChannel(c echo.Context, e *Entry) error {
	h := c.Response().Header()
	body, etag := e.ChannelAt(time.Now())
	h.Set("ETag", etag)
	if ETagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.JSON(http.StatusOK, body)
}
