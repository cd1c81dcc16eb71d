package resolver

import (
	"strconv"
	"strings"
)

// The juju scheme is github.com/juju/version's Number, scanned by hand
// because classification must run at millions of tags per second. The
// grammar is exactly juju's
//
//	^(\d{1,9})\.(\d{1,9})(?:\.|-([a-z]+))(\d{1,9})(\.\d{1,9})?$
//
// where \d is an ASCII digit.

const (
	jujuShape     = "juju version needs major.minor.patch or major.minor-tagN"
	jujuNoV       = `juju version has no "v" prefix`
	jujuTooLong   = "juju version number longer than 9 digits"
	jujuTagLetter = "juju tag needs lowercase letters then a number"
)

func parseJuju(tag string) (Version, error) {
	if tag == "" {
		return Version{}, parseError(tag, "empty tag")
	}
	if tag[0] == 'v' {
		return Version{}, parseError(tag, jujuNoV)
	}
	v := Version{juju: true}
	var pre string // the tag's label
	clean := true  // tag is already juju's String(): no leading zeros, no ".0" build
	var reason string
	var i int
	num := func(what *int) bool {
		n, end, lz, r := jujuNumber(tag, i)
		if r != "" {
			reason = r
			return false
		}
		*what, i = n, end
		clean = clean && !lz
		return true
	}
	if !num(&v.Major) {
		return Version{}, parseError(tag, reason)
	}
	if i == len(tag) || tag[i] != '.' {
		return Version{}, parseError(tag, jujuShape)
	}
	i++
	if !num(&v.Minor) {
		return Version{}, parseError(tag, reason)
	}
	if i == len(tag) {
		return Version{}, parseError(tag, jujuShape)
	}
	switch tag[i] {
	case '.':
		i++
		if !num(&v.Patch) {
			return Version{}, parseError(tag, reason)
		}
	case '-':
		i++
		start := i
		for i < len(tag) && 'a' <= tag[i] && tag[i] <= 'z' {
			i++
		}
		if i == start || i == len(tag) || !isDigit(tag[i]) {
			return Version{}, parseError(tag, jujuTagLetter)
		}
		pre = tag[start:i]
		if !num(&v.PreNumber) {
			return Version{}, parseError(tag, reason)
		}
	default:
		return Version{}, parseError(tag, jujuShape)
	}
	if i < len(tag) && tag[i] == '.' {
		i++
		if !num(&v.Build) {
			return Version{}, parseError(tag, reason)
		}
		clean = clean && v.Build > 0
	}
	if i < len(tag) {
		return Version{}, parseError(tag, "trailing "+strconv.Quote(tag[i:])+" after the juju version")
	}
	if clean {
		v.canonical = tag
	} else {
		v.canonical = jujuString(v, pre)
	}
	if pre != "" {
		start := strings.IndexByte(v.canonical, '-') + 1
		end := start + len(pre)
		for end < len(v.canonical) && isDigit(v.canonical[end]) {
			end++
		}
		v.preStart, v.preEnd = uint16(start), uint16(end)
	}
	return v, nil
}

// jujuNumber reads \d{1,9} at i. lz reports a leading zero (which juju
// accepts and prints without).
func jujuNumber(s string, i int) (n, end int, lz bool, reason string) {
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	switch {
	case i == start:
		return 0, i, false, jujuShape
	case i-start > 9:
		return 0, i, false, jujuTooLong
	}
	return atoiDigits(s[start:i]), i, s[start] == '0' && i-start > 1, ""
}

// jujuString is juju's Number.String with one allocation.
func jujuString(v Version, pre string) string {
	var arr [64]byte
	b := strconv.AppendInt(arr[:0], int64(v.Major), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(v.Minor), 10)
	if pre == "" {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(v.Patch), 10)
	} else {
		b = append(b, '-')
		b = append(b, pre...)
		b = strconv.AppendInt(b, int64(v.PreNumber), 10)
	}
	if v.Build > 0 {
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(v.Build), 10)
	}
	return string(b)
}

// compareJuju is juju's Number.Compare: major, minor, then the tag (untagged
// is highest, tags compare as strings), then patch or tag number, then build.
func compareJuju(a, b Version) int {
	if c := cmpInt(a.Major, b.Major); c != 0 {
		return c
	}
	if c := cmpInt(a.Minor, b.Minor); c != 0 {
		return c
	}
	if ap, bp := a.Pre(), b.Pre(); ap != bp {
		switch {
		case ap == "":
			return 1
		case bp == "":
			return -1
		}
		return strings.Compare(ap, bp)
	}
	// Tagged versions keep Patch 0, so this is juju's single Patch field.
	if c := cmpInt(a.Patch, b.Patch); c != 0 {
		return c
	}
	if c := cmpInt(a.PreNumber, b.PreNumber); c != 0 {
		return c
	}
	return cmpInt(a.Build, b.Build)
}
