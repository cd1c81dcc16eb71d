package resolver

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
)

// Digest is a manifest's content digest as the registry names it: "sha256:"
// and 64 lowercase hex digits, or, rarely, another algorithm. A snapshot
// holds one per tag, so a sha256 digest is kept as its 32 bytes (56 bytes in
// all, where a string took 96 with its header and its allocation); any other
// text is kept as given. The zero Digest is "no digest yet". Digests compare
// with ==.
type Digest struct {
	sum   [32]byte
	other string // the text of a digest that is not sha256 hex
	set   bool   // sum holds a sha256 digest
}

const sha256Prefix = "sha256:"

// ParseDigest holds s. It never fails: the registry's word is kept even when
// it is not sha256 (the text then stays as it is), and "" is the zero Digest.
func ParseDigest(s string) Digest {
	var d Digest
	if len(s) == len(sha256Prefix)+64 && s[:len(sha256Prefix)] == sha256Prefix {
		h := s[len(sha256Prefix):]
		for i := range d.sum {
			hi, ok1 := lowerHexDigit(h[2*i])
			lo, ok2 := lowerHexDigit(h[2*i+1])
			if !ok1 || !ok2 {
				return Digest{other: s}
			}
			d.sum[i] = hi<<4 | lo
		}
		d.set = true
		return d
	}
	return Digest{other: s}
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
	if !d.set {
		return d.other
	}
	var b [len(sha256Prefix) + 64]byte
	copy(b[:], sha256Prefix)
	hex.Encode(b[len(sha256Prefix):], d.sum[:])
	return string(b[:])
}

// Equal is ==, for go-cmp (which cannot see unexported fields).
func (d Digest) Equal(o Digest) bool { return d == o }

// IsZero reports whether d is no digest.
func (d Digest) IsZero() bool { return !d.set && d.other == "" }

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
