package indexer

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidemark-dev/tidemark/resolver"
)

// ociTag is the tag grammar of the OCI distribution spec. A listed name
// outside it has no manifest to ask for, so its digest is never requested.
var ociTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

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
