package server

import (
	"net/http"

	"github.com/tidemark-dev/tidemark/resolver"
)

// clusterID is the request's X-SUC-Cluster-ID when it is one (1-128 of
// [A-Za-z0-9._:-]); anything else counts as absent.
func clusterID(r *http.Request) string {
	v := r.Header["X-Suc-Cluster-Id"]
	if len(v) == 0 || !resolver.ValidClusterID(v[0]) {
		return ""
	}
	return v[0]
}
