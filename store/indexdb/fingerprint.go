package indexdb

import (
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strings"

	"github.com/tidemark-dev/tidemark/resolver"
)

// fingerprintVersion starts every fingerprint, so that a change to what is
// hashed (or how) never matches a fingerprint stored by an older binary.
const fingerprintVersion = "tidemark-listing-v1\x00"

// fingerprint hashes the rows a merge of a listing would write: every tag
// name with its classification, in name order (registries need not list in
// any order). Hashing the rows rather than the parser configuration (scheme,
// build pattern, label map) makes a configuration change that reclassifies
// even one tag a different fingerprint, and one that reclassifies none the
// same, which is right: the rows already hold what a merge would write.
// tags must be free of duplicate names (scanTags).
func fingerprint(tags []resolver.Tag) []byte {
	// Registries (distribution, Docker Hub) list in name order already;
	// checking is a tenth of the cost of sorting 10,000 rows. Otherwise
	// pointers are sorted: a Tag (136 bytes) is 17 times their size to move.
	sorted := make([]*resolver.Tag, len(tags))
	for i := range tags {
		sorted[i] = &tags[i]
	}
	byName := func(a, b *resolver.Tag) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(sorted, byName) {
		slices.SortFunc(sorted, byName)
	}
	h := sha256.New()
	h.Write([]byte(fingerprintVersion))
	buf := make([]byte, 0, 256)
	for _, t := range sorted {
		h.Write(appendRow(buf[:0], t))
	}
	return h.Sum(nil)
}

// appendRow encodes the tag's row (tagColumns) unambiguously: per value a
// type byte, then a length-prefixed string or a varint. A number is hashed
// as parsed, even one its int4 column holds as NULL.
func appendRow(buf []byte, t *resolver.Tag) []byte {
	buf = appendString(buf, t.Name)
	if !t.Valid {
		buf = appendString(append(buf, 'F'), t.ParseError())
		for range len(tagColumns) - 3 {
			buf = append(buf, 'n')
		}
		return buf
	}
	v := &t.Version
	buf = appendString(append(buf, 'T'), "")
	buf = appendInt(appendInt(appendInt(buf, v.Major), v.Minor), v.Patch)
	buf = appendInt(appendString(buf, v.Pre()), v.PreNumber)
	buf = appendInt(appendString(buf, v.Prerelease()), v.Build)
	buf = appendString(appendString(buf, v.BuildMeta()), v.String())
	return appendString(buf, t.Stream.String())
}

func appendInt(buf []byte, v int) []byte {
	return binary.AppendVarint(append(buf, 'i'), int64(v))
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(append(buf, 's'), uint64(len(s)))
	return append(buf, s...)
}
