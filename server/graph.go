package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/tidemark-dev/tidemark/server/core"
)

// graph answers the update graph in the Cincinnati format (CONTRACT
// section 13) for the cluster-version-operator, oc adm upgrade and
// oc-mirror. version= and arch= are accepted and change nothing: the
// client finds its own node (one that is not a node is the client's to
// report). id= lets risks limited to some clusters cover edges.
func (s *Server) graph(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	q := c.QueryParams()
	channel := q.Get("channel")
	if channel == "" {
		return core.InvalidParam("channel", "channel is required")
	}
	id := q.Get("id")
	if len(id) > 128 {
		return core.InvalidParam("id", "%d bytes, at most 128", len(id))
	}
	if _, err := v.Channel(channel); err != nil {
		return core.BadParam("channel", err)
	}
	base := core.BaseURL(s.Opts.ExternalURL, c.Request())
	gz := acceptsGzip(c.Request())
	body, err := v.Graphs.Get(v.Snap, channel, id, base, gz)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", core.ChannelCacheControl)
	h.Set("Vary", "Accept-Encoding")
	if gz {
		// A graph is megabytes of repetitive JSON; gzip makes it a tenth,
		// compressed once per snapshot. Go's HTTP client (the CVO's) asks
		// for gzip by itself.
		h.Set("Content-Encoding", "gzip")
	}
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body)
}

// acceptsGzip reports whether r's Accept-Encoding allows gzip (listed
// with no q, or a q above 0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(params), "=")
		if !ok || strings.TrimSpace(k) != "q" {
			return true
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q > 0
	}
	return false
}
