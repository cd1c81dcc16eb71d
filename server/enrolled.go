package server

import (
	"fmt"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/enroll"
	"github.com/tidemark-dev/tidemark/server/core"
)

// asker is the cluster a channel request speaks for: the ID its
// enrollment key binds (enrolled), else its X-SUC-Cluster-ID.
type asker struct {
	id       string
	enrolled bool
}

// askerOf reads the request's cluster (fleet.enrollment). With enrollment
// off a key is not looked at. A key that is wrong or revoked is a refused
// credential (it counts against the client's address); with enrollment
// required, a cluster ID without a key is refused too.
func (s *Server) askerOf(c echo.Context) (asker, error) {
	r := c.Request()
	keys := s.Opts.Enrollment
	mode := keys.Mode()
	if mode == enroll.Off {
		return asker{id: clusterID(r)}, nil
	}
	if key := enroll.KeyOf(r); key != "" {
		if id, ok := keys.ID(key); ok {
			return asker{id: id, enrolled: true}, nil
		}
		s.Log.Info("enrollment key refused", "client", s.ClientAddr(r), "path", core.LogPath(r))
		return asker{}, s.CredentialFailed(c, fmt.Errorf("%w: the enrollment key is wrong or revoked; "+
			"tidemark cluster enroll ID makes a new one (after tidemark cluster revoke ID)", core.ErrEnrollment))
	}
	id := clusterID(r)
	if mode == enroll.Required && id != "" {
		return asker{}, fmt.Errorf("%w: fleet.enrollment is required and cluster %q sent no key; "+
			"add ?key=<its key> to the Plan's channel URL (tidemark cluster enroll %s prints it)", core.ErrEnrollment, id, id)
	}
	return asker{id: id}, nil
}
