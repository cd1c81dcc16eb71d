package catalog

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"

	"github.com/tidemark-dev/tidemark/resolver"
)

// Constraint is a Masterminds Constraint compiled for checks that allocate
// nothing. Masterminds' Check builds an error for every version it rejects
// (about 1 µs and 4 allocations), which made a Constraint channel over 10,000
// versions cost 10 ms, and the same again on every
// GET .../versions?Constraint= request.
//
// The semantics are Masterminds' exactly, quirks included (a prerelease only
// satisfies an AND group that names a prerelease; "!=1.x" and ">1.2" treat
// the wildcard as Masterminds does): TestConstraintMatchesMasterminds and
// FuzzConstraint compare the two. When compiling finds anything it does not
// mirror, the Constraint keeps Masterminds' own Check (correct, only slower).
type Constraint struct {
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
func compileConstraint(text string) (*Constraint, error) {
	ms, err := semver.NewConstraint(text)
	if err != nil {
		return nil, err
	}
	c := &Constraint{canonical: ms.String()}
	if !c.parse(text) {
		return &Constraint{canonical: c.canonical, fallback: ms}, nil
	}
	return c, nil
}

// parse mirrors semver.NewConstraint; false when the result might differ.
func (c *Constraint) parse(text string) bool {
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
			t, p, ok := parseConTerm(res.one, s)
			if !ok {
				return false
			}
			g.hasPre = g.hasPre || t.pre != ""
			c.anyPre = c.anyPre || t.pre != ""
			g.terms = append(g.terms, t)
			ands = append(ands, p)
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

// constraintCacheSize bounds the compiled constraints a snapshot keeps for
// requests: enough for the constraints clients actually send, while
// arbitrary user input cannot grow it.
const constraintCacheSize = 256

// maxConstraintLen is Masterminds' own limit. Longer text is refused before
// any work, and never cached: a flood of huge strings costs nothing kept.
const maxConstraintLen = 512

// ConstraintCache memoizes compileConstraint for one snapshot's requests.
// Errors are cached too, so a client repeating a bad constraint costs a map
// lookup. When full, an arbitrary entry (Go's map order) makes room: a
// constraint in steady use survives a flood of one-off strings with high
// probability, and losing it only costs one recompile.
type ConstraintCache struct {
	mu sync.Mutex
	m  map[string]conCacheEntry
}

type conCacheEntry struct {
	c   *Constraint
	err error
}

func (cc *ConstraintCache) Get(text string) (*Constraint, error) {
	if len(text) > maxConstraintLen {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", resolver.ErrInvalid, len(text), maxConstraintLen)
	}
	cc.mu.Lock()
	e, ok := cc.m[text]
	cc.mu.Unlock()
	if ok {
		return e.c, e.err
	}
	c, err := compileConstraint(text)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.m == nil {
		cc.m = make(map[string]conCacheEntry)
	}
	if len(cc.m) >= constraintCacheSize {
		for k := range cc.m {
			delete(cc.m, k)
			break
		}
	}
	cc.m[text] = conCacheEntry{c, err}
	return c, err
}

// channelConstraint compiles a channel's constraint from ConstraintText. The
// Constraint field stays the authority: if the text is missing or parses to
// something else, the result checks with Constraint itself.
func channelConstraint(ch *Channel) *Constraint {
	if ch.Constraint == nil {
		return nil
	}
	c, err := compileConstraint(ch.ConstraintText)
	switch {
	case err != nil || c.fallback != nil || c.canonical != ch.Constraint.String():
		return &Constraint{fallback: ch.Constraint}
	case ch.Constraint.IncludePrerelease:
		cp := *c
		cp.includePre = true
		return &cp
	}
	return c
}
