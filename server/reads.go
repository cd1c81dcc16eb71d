package server

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
)

// dbDeadline bounds the database work of a request: a database that
// accepts connections but never answers must cost a request DBTimeout and
// a 503 (the store maps the expired deadline to ErrUnavailable), never a
// hung client. The reload after a write has its own bound.
func (s *Server) dbDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.opts.DBTimeout)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

func (s *Server) writeUnavailable(c echo.Context) error {
	method := c.Request().Method
	if method == http.MethodHead {
		method = http.MethodGet // HEAD answers as GET does, to the byte count
	}
	return fmt.Errorf("%w: %s %s needs the database, which this server was started without", resolver.ErrUnavailable, method, c.Path())
}

// channelHistory is e's audit history as the API answers it; the console
// shows the same. The caller has checked that there is a store.
func (s *Server) channelHistory(ctx context.Context, e *channelEntry) ([]openapi.AuditEvent, error) {
	events, err := s.opts.Store.ChannelHistory(ctx, e.ans.Channel.Name, e.ans.Channel.Source)
	if err != nil {
		return nil, fmt.Errorf("history of %q: %w", e.ans.Channel.Name, err)
	}
	out := make([]openapi.AuditEvent, 0, len(events))
	for _, ev := range events {
		out = append(out, openapi.AuditEvent{At: ev.At.UTC(), Actor: ev.Actor, Action: ev.Action,
			From: strOrNil(ev.From), To: strOrNil(ev.To), Reason: ev.Reason})
	}
	return out, nil
}

func (s *Server) governance() (Governance, error) {
	if s.opts.Governance == nil {
		return nil, fmt.Errorf("%w: scheduled changes, approvals and freezes need the database, which this server was started without", resolver.ErrUnavailable)
	}
	return s.opts.Governance, nil
}

// rolloutWithCounts is e's rollout with the fleet's counts, as the API
// answers it and the console shows it. The caller has checked that there
// is a rollout store and that e has rolled out.
func (s *Server) rolloutWithCounts(ctx context.Context, e *channelEntry) (*openapi.Rollout, error) {
	rv := e.ans.Rollout
	onTo, onFrom, err := s.opts.Rollouts.Store.RolloutClusters(ctx, rv.Channel, rv.From, rv.To)
	if err != nil {
		return nil, fmt.Errorf("rollout of %q: %w", rv.Channel, err)
	}
	return rolloutJSON(&rv.Rollout, rv.Progress(time.Now()), &openapi.RolloutClusters{To: onTo, From: onFrom}), nil
}

// fleetSummaryOf is channel's fleet summary as the API answers it and the
// console charts it. The caller has checked that there is a fleet store.
func (s *Server) fleetSummaryOf(ctx context.Context, v *view, channel string) (openapi.FleetSummary, error) {
	sum, err := s.opts.Fleet.Store.FleetSummary(ctx, channel, time.Now().Add(-s.fleet.ActiveWindow()))
	if err != nil {
		return openapi.FleetSummary{}, err
	}
	v.snap.SortNewestFirst(channel, sum.Versions)
	v.snap.SortNewestFirst(channel, sum.Served)
	return openapi.FleetSummary{
		Channel: sum.Channel, Clusters: sum.Clusters, Active: sum.Active,
		Versions: countsJSON(sum.Versions), Served: countsJSON(sum.Served),
	}, nil
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

// Channel answers change on a pin or a block, and a block must reach
// upgrade controllers at their next poll, so no cache may serve a channel
// answer without asking again; the ETag keeps asking again cheap.
const channelCacheControl = "no-cache"

// channelParam is the current view and the channel its :name path
// parameter names, taken from that one view.
func (s *Server) channelParam(c echo.Context) (*view, *channelEntry, error) {
	v, err := s.view()
	if err != nil {
		return nil, nil, err
	}
	e, err := v.channel(pathParam(c, "name"))
	if err != nil {
		return nil, nil, err
	}
	return v, e, nil
}

func (v *view) channel(name string) (*channelEntry, error) {
	e, ok := v.channels[name]
	if !ok {
		return nil, badParam("name", fmt.Errorf("%w: channel %q", resolver.ErrNotFound, name))
	}
	return e, nil
}

// pathParam returns a path parameter decoded. Echo routes on the raw path
// when the client escaped something (a version's "+" sent as %2B), and then
// leaves the parameter escaped.
func pathParam(c echo.Context, name string) string {
	p := c.Param(name)
	if strings.IndexByte(p, '%') < 0 {
		return p
	}
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}
