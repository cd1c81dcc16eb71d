package indexer

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidemark-dev/tidemark/resolver"
)

// isOCITag reports whether name is in the tag grammar of the OCI
// distribution spec, [A-Za-z0-9_][A-Za-z0-9._-]{0,127}. A listed name
// outside it has no manifest to ask for, so its digest is never requested.
// (A loop, not the regexp: it runs for every tag of every listing, and the
// regexp was 5% of the indexing replica's CPU at a first index.)
func isOCITag(name string) bool {
	if len(name) == 0 || len(name) > 128 || name[0] == '.' || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// unstorableTag returns the unparsed tag that stands for name when Postgres
// cannot store name as text (a NUL byte, or bytes that are not UTF-8): one
// such tag would otherwise fail every scan of its source. The name is kept
// Go-quoted ("v1\x00"), which no real tag can collide with since the
// grammar has no quotes or backslashes; ok is false for a storable name.
func unstorableTag(name string) (t resolver.Tag, ok bool) {
	var why string
	switch {
	case !utf8.ValidString(name):
		why = "tag holds bytes that are not UTF-8; shown quoted"
	case strings.IndexByte(name, 0) >= 0:
		why = "tag holds a NUL byte; shown quoted"
	default:
		return resolver.Tag{}, false
	}
	return resolver.InvalidTag(strconv.Quote(name), why), true
}
