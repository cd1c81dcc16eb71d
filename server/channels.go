package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/server/core"
)

var (
	hdrNoCache = []string{core.ChannelCacheControl}
	hdrHTML    = []string{"text/html; charset=utf-8"}
	// hdrVary names what a channel URL's answer depends on besides the
	// URL: Accept (302 or the JSON object), the cluster (its rollout
	// bucket, its stepwise step, its settle) and the version it reports
	// (never a downgrade). A shared cache in front (a CDN) must key on
	// them, or it hands one cluster's answer to another.
	hdrVary = []string{"Accept, X-SUC-Cluster-ID, X-SUC-Latest-Version"}
)

// releaseChannel is the system-upgrade-controller contract: 302 whose
// Location ends in the version, or 404. It is the hot path, so everything
// it sends is precomputed in the view when it can be.
func (s *Server) releaseChannel(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	req := c.Request()
	who, err := s.askerOf(c)
	if err != nil {
		return err
	}
	if e, err = s.clusterAnswer(req, who, v, e); err != nil {
		return err
	}
	h := c.Response().Header()
	h["Cache-Control"] = hdrNoCache
	h["Vary"] = hdrVary
	if w := warning(e); w != nil {
		h["Warning"] = w
	}
	if wantsJSON(req) {
		return core.SendChannel(c, e)
	}
	loc, body := e.LocationHeader, e.Body
	if loc == nil {
		l := core.BaseURL(s.Opts.ExternalURL, req) + e.Suffix
		loc, body = []string{l}, core.RedirectBody(l)
	}
	h["Location"] = loc
	h["Content-Type"] = hdrHTML
	c.Response().WriteHeader(http.StatusFound)
	_, err = c.Response().Write(body)
	return err
}

// releaseChannels is channelserver's collection, with latest resolved.
func (s *Server) releaseChannels(c echo.Context) error {
	v, err := s.View()
	if err != nil {
		return err
	}
	base := core.BaseURL(s.Opts.ExternalURL, c.Request()) + "/v1-release/channels"
	out := openapi.ReleaseCollection{
		Type:         "collection",
		Links:        map[string]string{"self": base},
		ResourceType: "channels",
		Data:         make([]openapi.ReleaseChannel, 0, len(v.List)),
	}
	for _, e := range v.List {
		ch := e.Ans.Channel
		rc := openapi.ReleaseChannel{
			ID:     ch.Name,
			Type:   "channel",
			Links:  map[string]string{"self": base + "/" + url.PathEscape(ch.Name)},
			Name:   ch.Name,
			Latest: e.Version,
		}
		if ch.Include != nil {
			rc.LatestRegexp = ch.Include.String()
		}
		if ch.Exclude != nil {
			rc.ExcludeRegexp = ch.Exclude.String()
		}
		out.Data = append(out.Data, rc)
	}
	c.Response().Header().Set("Cache-Control", core.ChannelCacheControl)
	return c.JSON(http.StatusOK, out)
}

// wantsJSON reports whether a channel URL client asked for the channel
// object instead of the redirect.
func wantsJSON(r *http.Request) bool {
	// Media types are case-insensitive (RFC 9110 8.3.1).
	a := r.Header.Get("Accept")
	return a != "" && strings.Contains(strings.ToLower(a), "application/json")
}

// noAnswer is the 404 of a channel that serves nothing, saying why when the
// resolver knows (a pin on a blocked or vanished version), and that its
// source's last scan failed when it did (a registry that is down).
func noAnswer(v *core.View, a snapshot.ChannelAnswer) error {
	why := a.Why
	if why == "" {
		why = fmt.Sprintf("channel %q has no eligible version", a.Channel.Name)
	}
	if sv, err := v.Snap.SourceInfo(a.Channel.Source); err == nil {
		if failed := core.ScanFailed(sv); failed != "" {
			why += "; " + failed
		}
	}
	return fmt.Errorf("%w: %s", resolver.ErrNotFound, why)
}
