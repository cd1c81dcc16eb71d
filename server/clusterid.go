package server

import "net/http"

// clusterID is the request's X-SUC-Cluster-ID when it is one (1-128 of
// [A-Za-z0-9._:-]); anything else counts as absent.
func clusterID(r *http.Request) string {
	v := r.Header["X-Suc-Cluster-Id"]
	if len(v) == 0 {
		return ""
	}
	id := v[0]
	if len(id) == 0 || len(id) > 128 {
		return ""
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return ""
		}
	}
	return id
}
