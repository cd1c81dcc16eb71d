package resolver

// ValidClusterID reports whether id can name a cluster: 1-128 of
// [A-Za-z0-9._:-], as X-SUC-Cluster-ID and an enrollment take it.
func ValidClusterID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// EnrolledKey is one valid enrollment key's SHA-256 and the cluster ID it
// binds a request to (fleet.enrollment).
type EnrolledKey struct {
	Hash [32]byte
	ID   string
}
