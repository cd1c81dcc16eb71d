package indexdb

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
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
// rows must be free of duplicate names (scanRows).
func fingerprint(rows [][]any) []byte {
	byName := func(a, b []any) int { return strings.Compare(a[0].(string), b[0].(string)) }
	// Registries (distribution, Docker Hub) list in name order already;
	// checking is a tenth of the cost of sorting 10,000 rows.
	sorted := rows
	if !slices.IsSortedFunc(rows, byName) {
		sorted = slices.Clone(rows)
		slices.SortFunc(sorted, byName)
	}
	h := sha256.New()
	h.Write([]byte(fingerprintVersion))
	buf := make([]byte, 0, 256)
	for _, row := range sorted {
		buf = buf[:0]
		for _, v := range row {
			buf = appendValue(buf, v)
		}
		h.Write(buf)
	}
	return h.Sum(nil)
}

// appendValue encodes one COPY value unambiguously: a type byte, then a
// length-prefixed string or a varint.
func appendValue(buf []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, 'n')
	case bool:
		if v {
			return append(buf, 'T')
		}
		return append(buf, 'F')
	case int:
		return binary.AppendVarint(append(buf, 'i'), int64(v))
	case string:
		buf = binary.AppendUvarint(append(buf, 's'), uint64(len(v)))
		return append(buf, v...)
	default:
		// tagRow produces only the types above; this keeps a new column
		// type hashed (if less compactly) rather than ignored.
		s := fmt.Sprintf("%T:%v", v, v)
		buf = binary.AppendUvarint(append(buf, '?'), uint64(len(s)))
		return append(buf, s...)
	}
}
