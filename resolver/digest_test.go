package resolver

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"
)

// TestDigestKeepsTheRegistrysText: every digest comes back exactly as the
// registry spelled it, compact or not, and equal texts are equal Digests.
func TestDigestKeepsTheRegistrysText(t *testing.T) {
	sha := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		text    string
		compact bool
	}{
		{sha, true},
		{"sha256:" + strings.Repeat("f", 64), true},
		{"", false},
		{"sha256:" + strings.Repeat("A", 64), false},          // uppercase: kept as text
		{"sha256:" + strings.Repeat("a", 63), false},          // short
		{"sha256:" + strings.Repeat("a", 63) + "g", false},    // not hex
		{"sha512:" + strings.Repeat("ab", 64), false},         // another algorithm
		{"sha256:" + strings.Repeat("a", 64) + "\x00", false}, // trailing garbage
		{"\x00" + strings.Repeat("a", 32), false},             // the compact form's shape, as text
		{"\x01x", false},
	} {
		d := ParseDigest(tc.text)
		compact := len(d.b) == 33 && d.b[0] == markSHA256
		if d.String() != tc.text || compact != tc.compact || d.IsZero() != (tc.text == "") {
			t.Errorf("ParseDigest(%q) = %q (compact %v, zero %v), want the same text, compact %v", tc.text, d.String(), compact, d.IsZero(), tc.compact)
		}
		if again := ParseDigest(strings.Clone(tc.text)); d != again || !d.Equal(again) {
			t.Errorf("ParseDigest(%q) differs from itself", tc.text)
		}
		b, err := json.Marshal(struct{ D Digest }{d})
		var back struct{ D Digest }
		if err != nil || json.Unmarshal(b, &back) != nil || back.D != d {
			t.Errorf("JSON of %q: %s (%v) did not round-trip", tc.text, b, err)
		}
		var scanned Digest
		if err := scanned.Scan(tc.text); err != nil || scanned != d {
			t.Errorf("Scan(%q) = %q, %v", tc.text, scanned.String(), err)
		}
		if v, _ := d.Value(); v != tc.text {
			t.Errorf("Value of %q = %v", tc.text, v)
		}
	}
	if ParseDigest(sha) == ParseDigest("sha256:"+strings.Repeat("0123456789abcdef", 3)+strings.Repeat("0", 16)) {
		t.Error("two different digests compare equal")
	}
	var d Digest
	if err := d.Scan(nil); err != nil || !d.IsZero() {
		t.Errorf("Scan(NULL) = %q, %v; want no digest", d.String(), err)
	}
	if err := d.Scan(42); err == nil {
		t.Error("Scan(42) = nil error, want one")
	}
	// The point of the type: a tag's digest in a snapshot, empty until the
	// digest phase sees it, costs no more than an empty string.
	if n := unsafe.Sizeof(Digest{}); n > unsafe.Sizeof("") {
		t.Errorf("Digest is %d bytes, want <= %d", n, unsafe.Sizeof(""))
	}
}
