package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// channelReleases answers Renovate's custom datasource format for the
// versions the registry view shows for the channel (its served set and
// every eligible version below its newest, snapshot.ServableWithin):
// version is the registry tag, releaseTimestamp when Tidemark first indexed
// it, so Renovate's minimumReleaseAge waits for soak on any registry.
func (s *API) channelReleases(c echo.Context) error {
	v, e, err := s.ChannelParam(c)
	if err != nil {
		return err
	}
	active, _ := s.FleetRec.ActiveServed(e.Ans.Channel.Name)
	vs, err := v.Snap.ServableWithin(e.Ans.Channel.Name, active, time.Now())
	if err != nil {
		return err
	}
	out := openapi.ChannelReleases{Releases: make([]openapi.ChannelRelease, 0, len(vs))}
	if src, err := v.Snap.SourceInfo(e.Ans.Channel.Source); err == nil {
		out.SourceURL = "https://" + src.Source.Image
	}
	for _, vv := range vs {
		r := openapi.ChannelRelease{Version: vv.Name, Digest: vv.Digest.String()}
		if !vv.FirstSeen.IsZero() {
			t := vv.FirstSeen.UTC()
			r.ReleaseTimestamp = &t
		}
		if l := v.Snap.Lines().LineOf(e.Ans.Channel.Source, vv.Version); l != nil && l.Class == lifecycle.Expired {
			r.IsDeprecated = true
		}
		out.Releases = append(out.Releases, r)
	}
	c.Response().Header().Set("Cache-Control", listCacheControl)
	return c.JSON(http.StatusOK, out)
}
