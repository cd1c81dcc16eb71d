package resolver

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
)

// constraint is a Masterminds constraint compiled for checks that allocate
// nothing. Masterminds' Check builds an error for every version it rejects
// (about 1 µs and 4 allocations), which made a constraint channel over 10,000
// versions cost 10 ms, and the same again on every
// GET .../versions?constraint= request.
//
// The semantics are Masterminds' exactly, quirks included (a prerelease only
// satisfies an AND group that names a prerelease; "!=1.x" and ">1.2" treat
// the wildcard as Masterminds does): TestConstraintMatchesMasterminds and
// FuzzConstraint compare the two. When compiling finds anything it does not
// mirror, the constraint keeps Masterminds' own Check (correct, only slower).
type constraint struct {
	groups     []conGroup // OR of ANDs
	includePre bool       // Masterminds' IncludePrerelease
	anyPre     bool       // some group has hasPre: else no prerelease passes
	// canonical is Masterminds' String() of the same constraint, to detect a
	// channel whose Constraint and ConstraintText disagree.
	canonical string
	fallback  *semver.Constraints // non-nil: check with Masterminds instead
}

type conGroup struct {
	hasPre bool // some comparator names a prerelease: prereleases may pass
	terms  []conTerm
}

type conOp uint8

const (
	opEq    conOp = iota // "", "="
	opNe                 // "!="
	opGt                 // ">"
	opLt                 // "<"
	opGe                 // ">=", "=>"
	opLe                 // "<=", "=<"
	opTilde              // "~", "~>"
	opCaret              // "^"
)

var conOps = map[string]conOp{
	"": opEq, "=": opEq, "!=": opNe, ">": opGt, "<": opLt, ">=": opGe, "=>": opGe,
	"<=": opLe, "=<": opLe, "~": opTilde, "~>": opTilde, "^": opCaret,
}

// conTerm is one comparator. Its version is Masterminds' own parse of the
// comparator, with wildcards and missing parts as zeros and flags.
type conTerm struct {
	op                     conOp
	major, minor, patch    uint64
	pre                    string
	dirty                  bool // a wildcard or missing part somewhere
	minorDirty, patchDirty bool // ... in the minor (1.x, 1) or the patch (1.2.x, 1.2)
}

// cver is a version as the constraint sees it: M.m.p[-pre], no build (see
// constraintVersion).
type cver struct {
	major, minor, patch uint64
	pre                 string
}

func cverOf(v *Version) cver {
	return cver{uint64(max(v.Major, 0)), uint64(max(v.Minor, 0)), uint64(max(v.Patch, 0)), v.Prerelease}
}

// conKey is one indexed version's cver and two runs it starts or belongs
// to, as indexes of the run's first version. Builds and build revisions
// (v1.33.6+k3s1, +k3s2; 2.9.10, 2.9.10.1) share a constraint's answer, so a
// scan checks each run once; and most constraints rule out whole minors, so
// a scan skips a minor it cannot match (see mayMatchMinor).
type conKey struct {
	v        cver
	run      int32 // adjacent versions with this cver
	minorRun int32 // adjacent versions with this major.minor
}

// conKeys builds the keys for versions (ascending, so equal cvers are
// adjacent; where they are not, runs are only shorter, never wrong).
func conKeys(versions []VersionView) []conKey {
	keys := make([]conKey, len(versions))
	for i := range versions {
		k := &keys[i]
		k.v, k.run, k.minorRun = cverOf(&versions[i].Version), int32(i), int32(i)
		if i == 0 {
			continue
		}
		p := &keys[i-1]
		if p.v.major == k.v.major && p.v.minor == k.v.minor {
			k.minorRun = p.minorRun
			if p.v == k.v {
				k.run = p.run
			}
		}
	}
	return keys
}

// scan returns the index of the highest version in keys[:end] that c
// accepts and ok (which sees the index) also accepts, or -1. It checks each
// run of equal cvers once and skips whole minors c rules out.
func (c *constraint) scan(keys []conKey, end int, ok func(int) bool) int {
	minorRun, minorOK := int32(-1), false
	for i := end - 1; i >= 0; i-- {
		k := &keys[i]
		if k.minorRun != minorRun {
			minorRun, minorOK = k.minorRun, c.mayMatchMinor(k.v.major, k.v.minor)
		}
		switch {
		case !minorOK:
			i = int(k.minorRun)
		case !c.checkC(&k.v):
			i = int(k.run)
		case ok(i):
			return i
		}
	}
	return -1
}

// The tokenizing expressions are Masterminds' own (v3.5.0), so both split a
// constraint into the same comparators; compileConstraint also checks that
// the comparators it found print as Masterminds' String() does.
const conVersionRe = `v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?` +
	`(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?` +
	`(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?`

const conOpsRe = `=||!=|>|<|>=|=>|<=|=<|~|~>|\^`

var conRes = sync.OnceValue(func() (r struct{ one, rng, find *regexp.Regexp }) {
	r.one = regexp.MustCompile(fmt.Sprintf(`^\s*(%s)\s*(%s)\s*$`, conOpsRe, conVersionRe))
	r.rng = regexp.MustCompile(fmt.Sprintf(`\s*(%s)\s+-\s+(%s)\s*`, conVersionRe, conVersionRe))
	r.find = regexp.MustCompile(fmt.Sprintf(`(%s)\s*(%s)`, conOpsRe, conVersionRe))
	return r
})

// compileConstraint parses text with Masterminds (its errors are the
// errors) and compiles it. It never fails on a text Masterminds accepts.
func compileConstraint(text string) (*constraint, error) {
	ms, err := semver.NewConstraint(text)
	if err != nil {
		return nil, err
	}
	c := &constraint{canonical: ms.String()}
	if !c.parse(text) {
		return &constraint{canonical: c.canonical, fallback: ms}, nil
	}
	return c, nil
}

// parse mirrors semver.NewConstraint; false when the result might differ.
func (c *constraint) parse(text string) bool {
	res := conRes()
	// Hyphen ranges become ">= a, <= b" before anything else, as in Masterminds.
	for _, m := range res.rng.FindAllStringSubmatch(text, -1) {
		text = strings.Replace(text, m[0], fmt.Sprintf(">= %s, <= %s ", m[1], m[11]), 1)
	}
	var printed []string
	for _, or := range strings.Split(text, "||") {
		found := res.find.FindAllString(or, -1)
		if found == nil {
			found = []string{or}
		}
		var g conGroup
		var ands []string
		for _, s := range found {
			t, printed, ok := parseConTerm(res.one, s)
			if !ok {
				return false
			}
			g.hasPre = g.hasPre || t.pre != ""
			c.anyPre = c.anyPre || t.pre != ""
			g.terms = append(g.terms, t)
			ands = append(ands, printed)
		}
		c.groups = append(c.groups, g)
		printed = append(printed, strings.Join(ands, " "))
	}
	return len(c.groups) > 0 && strings.Join(printed, " || ") == c.canonical
}

// parseConTerm mirrors Masterminds' parseConstraint. printed is the term as
// Masterminds' String() prints it.
func parseConTerm(one *regexp.Regexp, s string) (t conTerm, printed string, ok bool) {
	m := one.FindStringSubmatch(s)
	if m == nil {
		return conTerm{}, "", false
	}
	op, ok := conOps[m[1]]
	if !ok {
		return conTerm{}, "", false
	}
	t = conTerm{op: op}
	ver := m[2]
	switch {
	case isWild(m[3]) || m[3] == "":
		ver, t.dirty = "0.0.0"+m[6], true
	case isWild(strings.TrimPrefix(m[4], ".")) || m[4] == "":
		ver, t.dirty, t.minorDirty = m[3]+".0.0"+m[6], true, true
	case isWild(strings.TrimPrefix(m[5], ".")) || m[5] == "":
		ver, t.dirty, t.patchDirty = m[3]+m[4]+".0"+m[6], true, true
	}
	v, err := semver.NewVersion(ver)
	if err != nil {
		return conTerm{}, "", false
	}
	t.major, t.minor, t.patch, t.pre = v.Major(), v.Minor(), v.Patch(), v.Prerelease()
	return t, m[1] + m[2], true
}

func isWild(s string) bool { return s == "x" || s == "X" || s == "*" }

// check is Masterminds' Constraints.Check on constraintVersion(v).
func (c *constraint) check(v *Version) bool {
	cv := cverOf(v)
	return c.checkC(&cv)
}

func (c *constraint) checkC(v *cver) bool {
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
func (c *constraint) mayMatchMinor(major, minor uint64) bool {
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

// constraintCacheSize bounds the compiled constraints kept across requests
// and snapshots: enough for every configured channel and the constraints
// clients actually send, while arbitrary user input cannot grow it.
const constraintCacheSize = 256

var conCache = struct {
	sync.Mutex
	m map[string]conCacheEntry
}{m: make(map[string]conCacheEntry)}

type conCacheEntry struct {
	c   *constraint
	err error
}

// cachedConstraint is compileConstraint memoized. Errors are cached too, so
// a client repeating a bad constraint costs a map lookup. When full, an
// arbitrary entry (Go's map order) makes room: a constraint in steady use
// survives a flood of one-off strings with high probability, and losing it
// only costs one recompile.
func cachedConstraint(text string) (*constraint, error) {
	conCache.Lock()
	e, ok := conCache.m[text]
	conCache.Unlock()
	if ok {
		return e.c, e.err
	}
	c, err := compileConstraint(text)
	conCache.Lock()
	defer conCache.Unlock()
	if len(conCache.m) >= constraintCacheSize {
		for k := range conCache.m {
			delete(conCache.m, k)
			break
		}
	}
	conCache.m[text] = conCacheEntry{c, err}
	return c, err
}

// channelConstraint compiles a channel's constraint from ConstraintText. The
// Constraint field stays the authority: if the text is missing or parses to
// something else, the result checks with Constraint itself.
func channelConstraint(ch *Channel) *constraint {
	if ch.Constraint == nil {
		return nil
	}
	c, err := cachedConstraint(ch.ConstraintText)
	switch {
	case err != nil || c.fallback != nil || c.canonical != ch.Constraint.String():
		return &constraint{fallback: ch.Constraint}
	case ch.Constraint.IncludePrerelease:
		cp := *c
		cp.includePre = true
		return &cp
	}
	return c
}
