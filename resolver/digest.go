package resolver

import (
	"database/sql/driver"
	"fmt"
)

// Digest is a manifest's content digest as the registry names it: "sha256:"
// and 64 lowercase hex digits, or, rarely, another algorithm. A snapshot
// holds one per tag, so a sha256 digest is kept as its 32 bytes behind a
// marker byte (64 bytes in all, where its text took 96 with the string
// header and an 80-byte allocation); any other text is kept as given. No
// digest is the zero Digest, 16 bytes like an empty string (a digest held
// inline would cost 56 even when empty, as most tags are until the digest
// phase has seen them). Digests compare with ==.
type Digest struct {
	// b is markSHA256 and the 32 bytes; or markText and a text that
	// starts with a marker byte itself; or the text.
	b string
}

const (
	sha256Prefix = "sha256:"
	markSHA256   = '\x00'
	markText     = '\x01'
)

// ParseDigest holds s. It never fails: the registry's word is kept even when
// it is not sha256 (the text then stays as it is), and "" is the zero Digest.
func ParseDigest(s string) Digest {
	if len(s) == len(sha256Prefix)+64 && s[:len(sha256Prefix)] == sha256Prefix {
		var b [33]byte
		b[0] = markSHA256
		h := s[len(sha256Prefix):]
		ok := true
		for i := 0; i < 32 && ok; i++ {
			hi, ok1 := lowerHexDigit(h[2*i])
			lo, ok2 := lowerHexDigit(h[2*i+1])
			b[1+i], ok = hi<<4|lo, ok1 && ok2
		}
		if ok {
			return Digest{string(b[:])}
		}
	}
	if s != "" && (s[0] == markSHA256 || s[0] == markText) {
		return Digest{string(markText) + s}
	}
	return Digest{s}
}

// lowerHexDigit: only lowercase hex is compact, so that String gives back
// exactly the text the registry sent.
func lowerHexDigit(c byte) (byte, bool) {
	switch {
	case isDigit(c):
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// String is the digest as the registry spells it; "" for none.
func (d Digest) String() string {
	switch {
	case d.b == "":
		return ""
	case d.b[0] == markSHA256:
		const digits = "0123456789abcdef"
		var b [len(sha256Prefix) + 64]byte
		copy(b[:], sha256Prefix)
		for i := 1; i < len(d.b); i++ {
			b[len(sha256Prefix)+2*i-2], b[len(sha256Prefix)+2*i-1] = digits[d.b[i]>>4], digits[d.b[i]&15]
		}
		return string(b[:])
	case d.b[0] == markText:
		return d.b[1:]
	}
	return d.b
}

// Equal is ==, for go-cmp (which cannot see unexported fields).
func (d Digest) Equal(o Digest) bool { return d == o }

// IsZero reports whether d is no digest.
func (d Digest) IsZero() bool { return d.b == "" }

// MarshalText spells d as String does (JSON, YAML).
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText is ParseDigest.
func (d *Digest) UnmarshalText(b []byte) error {
	*d = ParseDigest(string(b))
	return nil
}

// Value stores d as its text (Postgres columns hold digests as text).
func (d Digest) Value() (driver.Value, error) { return d.String(), nil }

// Scan reads a digest stored as text; NULL is no digest.
func (d *Digest) Scan(src any) error {
	switch s := src.(type) {
	case nil:
		*d = Digest{}
	case string:
		*d = ParseDigest(s)
	case []byte:
		*d = ParseDigest(string(s))
	default:
		return fmt.Errorf("digest: cannot scan %T", src)
	}
	return nil
}
