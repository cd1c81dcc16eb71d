package api

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
)

// status is GET /api/v1/status: the build's version, this replica's
// configuration digest and the last signed publication's, and whether
// this replica signs.
func (s *API) status(c echo.Context) error {
	out := openapi.Status{Version: s.Opts.Version}
	if s.Opts.ConfigDigest != nil {
		out.Config.Digest = s.Opts.ConfigDigest()
	}
	if s.Opts.Signing != nil {
		digest, pub, holding := s.Opts.Signing.Status()
		out.Config.Digest = digest
		out.Signer = &openapi.StatusSigner{Holding: holding}
		if pub != nil {
			agree := pub.ConfigDigest == digest
			out.Config.Published, out.Config.InAgreement = &pub.ConfigDigest, &agree
			out.Signer.PublishedBy, out.Signer.StoreRevision = &pub.Replica, &pub.StoreRevision
		}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, out)
}
