package catalog

import (
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Evaluation of compiled constraints: Masterminds' checks ported branch for
// branch over a compact version (cver), plus the skipping scans the
// snapshot runs over its sorted versions.

// cver is a version as the constraint sees it: M.m.p[-pre], no build (see
// constraintVersion).
type cver struct {
	major, minor, patch uint64
	pre                 string
}

func cverOf(v *resolver.Version) cver {
	return cver{uint64(max(v.Major, 0)), uint64(max(v.Minor, 0)), uint64(max(v.Patch, 0)), v.Prerelease()}
}

// ConstraintKey is one indexed version's place in two runs, as indexes of
// the run's first version: the adjacent versions with its cver, and those
// with its major.minor. Builds and build revisions (v1.33.6+k3s1, +k3s2;
// 2.9.10, 2.9.10.1) share a constraint's answer, so a scan checks each run
// once; and most constraints rule out whole minors, so a scan skips a minor
// it cannot match (see mayMatchMinor). The version itself is read from the
// versions the keys were built for: a copy here cost 40 bytes a version.
type ConstraintKey struct {
	run      int32 // adjacent versions with this cver
	minorRun int32 // adjacent versions with this major.minor
}

// ConstraintKeys builds the keys for versions (ascending, so equal cvers are
// adjacent; where they are not, runs are only shorter, never wrong).
func ConstraintKeys(versions []resolver.VersionView) []ConstraintKey {
	keys := make([]ConstraintKey, len(versions))
	for i := range versions {
		k := &keys[i]
		k.run, k.minorRun = int32(i), int32(i)
		if i == 0 {
			continue
		}
		p, v := &versions[i-1].Version, &versions[i].Version
		if sameMinor(p, v) {
			k.minorRun = keys[i-1].minorRun
			if cverOf(p) == cverOf(v) {
				k.run = keys[i-1].run
			}
		}
	}
	return keys
}

// sameMinor: a and b are one major.minor as constraints see them.
func sameMinor(a, b *resolver.Version) bool {
	return max(a.Major, 0) == max(b.Major, 0) && max(a.Minor, 0) == max(b.Minor, 0)
}

// Scan returns the index of the highest version in versions[:end] (keys are
// ConstraintKeys(versions)) that c accepts and ok (which sees the index)
// also accepts, or -1. A rejection skips the version's whole run of equal
// cvers, and minors c rules out are skipped unchecked.
func (c *Constraint) Scan(versions []resolver.VersionView, keys []ConstraintKey, end int, ok func(int) bool) int {
	minorRun, minorOK := int32(-1), false
	for i := end - 1; i >= 0; i-- {
		k := &keys[i]
		if k.minorRun != minorRun {
			v := &versions[i].Version
			minorRun, minorOK = k.minorRun, c.mayMatchMinor(uint64(max(v.Major, 0)), uint64(max(v.Minor, 0)))
		}
		switch {
		case !minorOK:
			i = int(k.minorRun)
		case !c.Check(&versions[i].Version):
			i = int(k.run)
		case ok(i):
			return i
		}
	}
	return -1
}

// Check is Masterminds' Constraints.Check on constraintVersion(v).
func (c *Constraint) Check(v *resolver.Version) bool {
	cv := cverOf(v)
	return c.checkC(&cv)
}

func (c *Constraint) checkC(v *cver) bool {
	if c.fallback != nil {
		return c.fallback.Check(semver.New(v.major, v.minor, v.patch, v.pre, ""))
	}
	if v.pre != "" && !c.anyPre && !c.includePre {
		return false
	}
	for gi := range c.groups {
		g := &c.groups[gi]
		// Every Masterminds comparator rejects a prerelease unless the
		// group (or IncludePrerelease) lets prereleases in.
		if v.pre != "" && !g.hasPre && !c.includePre {
			continue
		}
		ok := true
		for ti := range g.terms {
			if !g.terms[ti].check(v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// mayMatchMinor is false only when no version major.minor.* (any patch, any
// prerelease) satisfies c: each comparator's check below, with the facts
// that hold for the whole minor. It ignores the prerelease gate, so it errs
// towards true; the tests hold it to checkC.
func (c *Constraint) mayMatchMinor(major, minor uint64) bool {
	if c.fallback != nil {
		return true
	}
	for gi := range c.groups {
		g := &c.groups[gi]
		ok := true
		for ti := range g.terms {
			if !g.terms[ti].mayMatchMinor(major, minor) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (t *conTerm) mayMatchMinor(major, minor uint64) bool {
	// Within the minor, cmp(v) has sign mm unless mm is 0 (then any sign).
	mm := 0
	switch {
	case major != t.major:
		mm = cmpU(major, t.major)
	case minor != t.minor:
		mm = cmpU(minor, t.minor)
	}
	tilde := func() bool {
		switch {
		case mm < 0:
			return false
		case t.major == 0 && t.minor == 0 && t.patch == 0 && !t.minorDirty && !t.patchDirty:
			return true
		case major != t.major:
			return false
		}
		return minor == t.minor || t.minorDirty
	}
	switch t.op {
	case opEq:
		if t.dirty {
			return tilde()
		}
		return mm == 0
	case opGt:
		switch {
		case !t.dirty:
			return mm >= 0
		case major != t.major:
			return major > t.major
		case t.minorDirty:
			return false
		case t.patchDirty:
			return minor > t.minor
		}
		return mm >= 0
	case opLt:
		return mm <= 0
	case opGe:
		return mm >= 0
	case opLe:
		switch {
		case !t.dirty:
			return mm <= 0
		case major > t.major:
			return false
		}
		return major != t.major || minor <= t.minor || t.minorDirty
	case opTilde:
		return tilde()
	case opCaret:
		switch {
		case mm < 0:
			return false
		case t.major > 0 || t.minorDirty:
			return major == t.major
		case major > 0:
			return false
		case t.minor > 0 || t.patchDirty:
			return minor == t.minor
		}
		return minor == 0
	}
	// opNe: "!=1.x" rules out a major; otherwise "!=" rules out at most one
	// patch's versions (and with a prerelease, not even all of those).
	return !t.minorDirty || major != t.major
}

// check ports Masterminds' constraint functions, branch for branch.
func (t *conTerm) check(v *cver) bool {
	switch t.op {
	case opEq:
		if t.dirty {
			return t.tilde(v)
		}
		return t.cmp(v) == 0
	case opNe:
		if t.dirty {
			switch {
			case t.major != v.major:
				return true
			case t.minor != v.minor && !t.minorDirty:
				return true
			case t.minorDirty:
				return false
			case t.patch != v.patch && !t.patchDirty:
				return true
			case t.patchDirty:
				if v.pre != "" || t.pre != "" {
					return comparePre(v.pre, t.pre) != 0
				}
				return false
			}
		}
		return t.cmp(v) != 0
	case opGt:
		switch {
		case !t.dirty:
			return t.cmp(v) > 0
		case v.major != t.major:
			return v.major > t.major
		case t.minorDirty:
			return false
		case t.patchDirty:
			return v.minor > t.minor
		}
		return t.cmp(v) > 0
	case opLt:
		return t.cmp(v) < 0
	case opGe:
		return t.cmp(v) >= 0
	case opLe:
		switch {
		case !t.dirty:
			return t.cmp(v) <= 0
		case v.major > t.major:
			return false
		case v.major == t.major && v.minor > t.minor && !t.minorDirty:
			return false
		}
		return true
	case opTilde:
		return t.tilde(v)
	case opCaret:
		switch {
		case t.cmp(v) < 0:
			return false
		case t.major > 0 || t.minorDirty:
			return v.major == t.major
		case v.major > 0:
			return false
		case t.minor > 0 || t.patchDirty:
			return v.minor == t.minor
		case v.minor > 0:
			return false
		}
		return v.patch == t.patch
	}
	return false
}

func (t *conTerm) tilde(v *cver) bool {
	switch {
	case t.cmp(v) < 0:
		return false
	case t.major == 0 && t.minor == 0 && t.patch == 0 && !t.minorDirty && !t.patchDirty:
		return true
	case v.major != t.major:
		return false
	case v.minor != t.minor && !t.minorDirty:
		return false
	}
	return true
}

// cmp is Masterminds' v.Compare(con).
func (t *conTerm) cmp(v *cver) int {
	switch {
	case v.major != t.major:
		return cmpU(v.major, t.major)
	case v.minor != t.minor:
		return cmpU(v.minor, t.minor)
	case v.patch != t.patch:
		return cmpU(v.patch, t.patch)
	case v.pre == "" && t.pre == "":
		return 0
	case v.pre == "":
		return 1
	case t.pre == "":
		return -1
	}
	return comparePre(v.pre, t.pre)
}

func cmpU(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// comparePre is Masterminds' comparePrerelease without strings.Split: parts
// are compared pairwise, a missing part counting as "".
func comparePre(a, b string) int {
	aDone, bDone := false, false
	for !aDone || !bDone {
		var pa, pb string
		pa, a, aDone = nextPart(a, aDone)
		pb, b, bDone = nextPart(b, bDone)
		if d := comparePrePart(pa, pb); d != 0 {
			return d
		}
	}
	return 0
}

func nextPart(s string, done bool) (part, rest string, nowDone bool) {
	if done {
		return "", "", true
	}
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return s[:i], s[i+1:], false
	}
	return s, "", true
}

// comparePrePart is Masterminds' comparePrePart, whose quirks (numeric parts
// of equal value but different spelling compare as -1) it keeps.
func comparePrePart(s, o string) int {
	switch {
	case s == o:
		return 0
	case s == "":
		return -1
	case o == "":
		return 1
	}
	oi, oNum := parseUint(o)
	si, sNum := parseUint(s)
	switch {
	case !oNum && !sNum:
		if s > o {
			return 1
		}
		return -1
	case !oNum:
		return -1
	case !sNum:
		return 1
	case si > oi:
		return 1
	}
	return -1
}

// parseUint is strconv.ParseUint(s, 10, 64) without the error allocation.
func parseUint(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > (1<<64-1)/10 {
			return 0, false
		}
		n1 := n*10 + uint64(c-'0')
		if n1 < n {
			return 0, false
		}
		n = n1
	}
	return n, true
}
