package resolver

import (
	"strconv"
	"strings"
)

// The semver scheme: semver 2.0 with an optional "v" (kept in the canonical
// string), scanned by hand for speed. With a build pattern, a trailing
// "[-+]<match>" is a build revision and is spelled "+<match>" canonically.

const (
	semverShape   = "semver needs major.minor.patch with an optional v prefix"
	semverFour    = "semver has exactly three numbers; a fourth is not semver"
	semverZero    = "semver number has a leading zero"
	semverTooLong = "semver number longer than 18 digits"
	semverPreChar = "semver pre-release holds only [0-9A-Za-z-] identifiers separated by dots"
	semverPreZero = "semver numeric pre-release identifier has a leading zero"
	semverMeta    = "semver build metadata holds only [0-9A-Za-z-] identifiers separated by dots"
)

func (p *Parser) parseSemver(tag string) (Version, error) {
	if p.build != nil {
		if i, g0, g1, ok := p.build.find(tag); ok {
			if v, err := parseSemverCore(tag[:i], false); err == nil {
				if g1-g0 > 18 {
					return Version{}, parseError(tag, "build number longer than 18 digits")
				}
				v.Build = atoiDigits(tag[g0:g1])
				v.canonical = tag
				if tag[i] == '-' {
					v.canonical = tag[:i] + "+" + tag[i+1:]
				}
				v.meta = uint16(i + 1)
				return v, nil
			}
			// The text before the suffix is no version on its own (as in
			// "1.0.0--k3s1"): read the tag as plain semver instead.
		}
	}
	return parseSemverCore(tag, true)
}

// parseSemverCore parses a semver 2.0 version with optional "v". With
// !allowMeta a "+" part is an error: the build pattern's match is the only
// metadata then. The spans it sets stay right when the caller extends the
// canonical string past s.
func parseSemverCore(s string, allowMeta bool) (v Version, err error) {
	if s == "" {
		return Version{}, parseError(s, "empty tag")
	}
	i := 0
	if s[0] == 'v' {
		i = 1
	}
	var reason string
	for n, field := range [...]*int{&v.Major, &v.Minor, &v.Patch} {
		if n > 0 {
			if i == len(s) || s[i] != '.' {
				return Version{}, parseError(s, semverShape)
			}
			i++
		}
		if *field, i, reason = semverNumber(s, i); reason != "" {
			return Version{}, parseError(s, reason)
		}
	}
	if i < len(s) && s[i] == '-' {
		i++
		ps := i
		for {
			start, digits := i, true
			for i < len(s) && s[i] != '.' && s[i] != '+' {
				c := s[i]
				if !isDigit(c) {
					if !isLetter(c) && c != '-' {
						return Version{}, parseError(s, semverPreChar)
					}
					digits = false
				}
				i++
			}
			if i == start {
				return Version{}, parseError(s, semverPreChar)
			}
			if digits && s[start] == '0' && i-start > 1 {
				return Version{}, parseError(s, semverPreZero)
			}
			if i == len(s) || s[i] != '.' {
				break
			}
			i++
		}
		v.preStart, v.preEnd = uint16(ps), uint16(i)
		_, v.PreNumber = preLabel(s[ps:i])
	}
	if i < len(s) && s[i] == '+' {
		if !allowMeta {
			return Version{}, parseError(s, "build metadata before the build suffix")
		}
		i++
		ms := i
		for {
			start := i
			for i < len(s) && s[i] != '.' && (isDigit(s[i]) || isLetter(s[i]) || s[i] == '-') {
				i++
			}
			if i == start {
				return Version{}, parseError(s, semverMeta)
			}
			if i == len(s) || s[i] != '.' {
				break
			}
			i++
		}
		if i < len(s) {
			return Version{}, parseError(s, semverMeta)
		}
		v.meta = uint16(ms)
	}
	if i < len(s) {
		if s[i] == '.' && i+1 < len(s) && isDigit(s[i+1]) {
			return Version{}, parseError(s, semverFour)
		}
		return Version{}, parseError(s, "trailing "+strconv.Quote(s[i:])+" after the semver version")
	}
	v.canonical = s
	return v, nil
}

// semverNumber reads a numeric identifier: 0 or [1-9][0-9]*, at most 18 digits.
func semverNumber(s string, i int) (n, end int, reason string) {
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	switch {
	case i == start:
		return 0, i, semverShape
	case s[start] == '0' && i-start > 1:
		return 0, i, semverZero
	case i-start > 18:
		return 0, i, semverTooLong
	}
	return atoiDigits(s[start:i]), i, ""
}

// preLabel splits the first pre-release identifier into its leading letters
// and number: "rc1" -> rc 1, "alpha.1" -> alpha 1, "rc.2" -> rc 2, "beta" ->
// beta 0, "k3s1-amd64" -> k 0 (not letters then digits).
func preLabel(pre string) (label string, n int) {
	id, next, _ := strings.Cut(pre, ".")
	l := 0
	for l < len(id) && isLetter(id[l]) {
		l++
	}
	label = id[:l]
	num := id[l:]
	if num == "" {
		num, _, _ = strings.Cut(next, ".")
	}
	if num == "" || len(num) > 18 || !allDigits(num) {
		return label, 0
	}
	return label, atoiDigits(num)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// compareSemver is semver precedence (see comparePrerelease), then the
// build number; Compare breaks the remaining ties.
func compareSemver(a, b Version) int {
	if c := cmpInt(a.Major, b.Major); c != 0 {
		return c
	}
	if c := cmpInt(a.Minor, b.Minor); c != 0 {
		return c
	}
	if c := cmpInt(a.Patch, b.Patch); c != 0 {
		return c
	}
	if ap, bp := a.Prerelease(), b.Prerelease(); ap != bp {
		switch {
		case ap == "":
			return 1
		case bp == "":
			return -1
		}
		if c := comparePrerelease(ap, bp); c != 0 {
			return c
		}
	}
	return cmpInt(a.Build, b.Build)
}

// comparePrerelease compares dot-separated identifiers left to right; a
// shorter list that is a prefix of a longer one is lower.
func comparePrerelease(a, b string) int {
	for {
		x, ra, moreA := strings.Cut(a, ".")
		y, rb, moreB := strings.Cut(b, ".")
		if c := compareIdent(x, y); c != 0 {
			return c
		}
		switch {
		case !moreA && !moreB:
			return 0
		case !moreA:
			return -1
		case !moreB:
			return 1
		}
		a, b = ra, rb
	}
}

// compareIdent orders two pre-release identifiers. Numeric identifiers
// compare numerically and below alphanumeric ones (semver). Alphanumeric
// identifiers compare by ASCII, except that the digit run right after the
// leading letters compares numerically, so rc9 < rc10 and beta9 < beta10.
// Splitting every identifier the same way (letters, then what follows: end <
// "-" < digits, then the number, then the rest) keeps the order transitive;
// special-casing only identifiers that are exactly letters+digits would not be
// (rc10 > rc9 > rc1x > rc10 in ASCII).
func compareIdent(x, y string) int {
	if x == y {
		return 0
	}
	nx, ny := allDigits(x), allDigits(y)
	switch {
	case nx && ny:
		return compareDigits(x, y)
	case nx:
		return -1
	case ny:
		return 1
	}
	lx, ly := 0, 0
	for lx < len(x) && isLetter(x[lx]) {
		lx++
	}
	for ly < len(y) && isLetter(y[ly]) {
		ly++
	}
	if c := strings.Compare(x[:lx], y[:ly]); c != 0 {
		return c
	}
	x, y = x[lx:], y[ly:]
	if c := cmpInt(identClass(x), identClass(y)); c != 0 || x == "" {
		return c
	}
	if isDigit(x[0]) {
		dx, dy := 0, 0
		for dx < len(x) && isDigit(x[dx]) {
			dx++
		}
		for dy < len(y) && isDigit(y[dy]) {
			dy++
		}
		if c := compareDigits(x[:dx], y[:dy]); c != 0 {
			return c
		}
		if c := strings.Compare(x[:dx], y[:dy]); c != 0 {
			return c // same value, different zeros: any fixed order
		}
		x, y = x[dx:], y[dy:]
	}
	return strings.Compare(x, y)
}

// identClass is what follows an identifier's leading letters, in ASCII order.
func identClass(rest string) int {
	switch {
	case rest == "":
		return 0
	case rest[0] == '-':
		return 1
	}
	return 2
}

// compareDigits compares digit strings by value, of any length.
func compareDigits(x, y string) int {
	x = strings.TrimLeft(x, "0")
	y = strings.TrimLeft(y, "0")
	if c := cmpInt(len(x), len(y)); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}
