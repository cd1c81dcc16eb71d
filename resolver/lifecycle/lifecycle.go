// Package lifecycle classifies a source's lines (major.minor) as
// supported, deprecated or expired from dates held as data: a source's
// policy (a support rule, explicit ends, an endoflife.date file) and when
// each line was released. Nothing here reads the clock: every function
// takes now, so a date passing needs no timer per version, and tests move
// the clock instead of sleeping.
package lifecycle

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Classification is where a line stands at a moment.
type Classification string

// The three classifications.
const (
	Supported  Classification = "supported"
	Deprecated Classification = "deprecated"
	Expired    Classification = "expired"
)

// Policy is one source's `lifecycle:` as configured.
type Policy struct {
	// Minors and Grace are `support: {minors, grace}`: a line ends Grace
	// after the release of the line Minors newer than it; Minors 0: no rule.
	Minors int
	Grace  time.Duration
	// DeprecateBefore: a line is deprecated this long before its end; 0: not.
	DeprecateBefore time.Duration
	// End holds explicit end dates by line; they win over the file and the rule.
	End map[string]time.Time
	// Cycles is the endoflife.date file's content, by line; File where it was read.
	Cycles map[string]Cycle
	File   string
}

// Empty reports whether p says nothing: no line of its source ever ends.
func (p Policy) Empty() bool {
	return p.Minors == 0 && p.DeprecateBefore == 0 && len(p.End) == 0 && len(p.Cycles) == 0
}

// Cycle is one entry of an endoflife.date file; a zero time is "not given"
// (or false).
type Cycle struct {
	Release time.Time
	EOL     time.Time
	Support time.Time
}

// Released is a line as the index knows it: its number and when its first
// released version was first indexed (zero: it has none yet).
type Released struct {
	Major, Minor int
	FirstIndexed time.Time
}

// Line is one line's dates and its classification at the table's moment.
type Line struct {
	Line         string // "1.31"
	Major, Minor int
	// Release is when the line was released; zero when it has no released
	// version and the file gives no releaseDate.
	Release        time.Time
	DeprecatedFrom time.Time // zero: never deprecated
	End            time.Time // zero: no end
	Successor      string    // the next line with a released version; "": none
	Class          Classification
	// warning is Warning's text after the version, made once per table:
	// a cluster on an ending line is told it on every poll.
	warning string
}

// Name is a line's name, "major.minor".
func Name(major, minor int) string { return strconv.Itoa(major) + "." + strconv.Itoa(minor) }

// ParseLine reads "major.minor".
func ParseLine(s string) (major, minor int, err error) {
	a, b, ok := strings.Cut(s, ".")
	if ok {
		major, err = strconv.Atoi(a)
		if err == nil {
			minor, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("%q is not a line (want major.minor, like 1.31)", s)
	}
	return major, minor, nil
}

// At classifies l at now.
func (l *Line) At(now time.Time) Classification {
	switch {
	case !l.End.IsZero() && !now.Before(l.End):
		return Expired
	case !l.DeprecatedFrom.IsZero() && !now.Before(l.DeprecatedFrom):
		return Deprecated
	}
	return Supported
}

// Table is a source's lines classified at one moment, newest first. It is
// built once per snapshot (or when a date passes, Next), never per request.
type Table struct {
	Lines  []Line
	byLine map[[2]int]int
	// At is the moment the classifications hold for; Next the first date
	// after it at which one changes (zero: none).
	At   time.Time
	Next time.Time
}

// Build classifies lines (any order; one entry per line) under p at now.
func Build(p Policy, lines []Released, now time.Time) *Table {
	ls := slices.Clone(lines)
	slices.SortFunc(ls, func(a, b Released) int {
		if a.Major != b.Major {
			return a.Major - b.Major
		}
		return a.Minor - b.Minor
	})
	t := &Table{At: now, byLine: make(map[[2]int]int, len(ls))}
	out := make([]Line, len(ls))
	var released []int // positions in ls of the lines released, ascending
	for i, r := range ls {
		l := Line{Line: Name(r.Major, r.Minor), Major: r.Major, Minor: r.Minor, Release: r.FirstIndexed}
		if c, ok := p.Cycles[l.Line]; ok && !c.Release.IsZero() {
			l.Release = c.Release
		}
		out[i] = l
		if !r.FirstIndexed.IsZero() {
			released = append(released, i)
		}
	}
	for k, i := range released {
		if k+1 < len(released) {
			out[i].Successor = out[released[k+1]].Line
		}
	}
	for i := range out {
		l := &out[i]
		if l.Successor == "" && l.Release.IsZero() {
			// Not released: its successor is still the next released line.
			for _, j := range released {
				if j > i {
					l.Successor = out[j].Line
					break
				}
			}
		}
		c := p.Cycles[l.Line]
		switch end, ok := p.End[l.Line]; {
		case ok:
			l.End = end
		case !c.EOL.IsZero():
			l.End = c.EOL
		case p.Minors > 0:
			l.End = ruleEnd(out, released, i, p)
		}
		if !c.Support.IsZero() {
			l.DeprecatedFrom = c.Support
		}
		if !l.End.IsZero() && p.DeprecateBefore > 0 {
			if d := l.End.Add(-p.DeprecateBefore); l.DeprecatedFrom.IsZero() || d.Before(l.DeprecatedFrom) {
				l.DeprecatedFrom = d
			}
		}
		l.Class = l.At(now)
		l.warning = l.warningText()
		for _, at := range []time.Time{l.DeprecatedFrom, l.End} {
			if at.After(now) && (t.Next.IsZero() || at.Before(t.Next)) {
				t.Next = at
			}
		}
	}
	slices.Reverse(out)
	for i := range out {
		t.byLine[[2]int{out[i].Major, out[i].Minor}] = i
	}
	t.Lines = out
	return t
}

// ruleEnd is line i's end under the support rule: Grace after the release
// of the released line Minors newer; zero when there is none yet.
func ruleEnd(out []Line, released []int, i int, p Policy) time.Time {
	n := 0
	for _, j := range released {
		if j <= i {
			continue
		}
		if n++; n == p.Minors {
			return out[j].Release.Add(p.Grace)
		}
	}
	return time.Time{}
}

// Of is the line of major.minor; ok is false when the table has none.
func (t *Table) Of(major, minor int) (*Line, bool) {
	if t == nil {
		return nil, false
	}
	i, ok := t.byLine[[2]int{major, minor}]
	if !ok {
		return nil, false
	}
	return &t.Lines[i], true
}

// Changed lists the lines whose classification differs between prev and
// t, for a line prev already had (a line first seen past a date is no
// transition), each with its new classification.
func (t *Table) Changed(prev *Table) []Line {
	if t == nil || prev == nil {
		return nil
	}
	var out []Line
	for _, l := range t.Lines {
		if p, ok := prev.Of(l.Major, l.Minor); ok && p.Class != l.Class && rank(l.Class) > rank(p.Class) {
			out = append(out, l)
		}
	}
	return out
}

func rank(c Classification) int {
	switch c {
	case Deprecated:
		return 1
	case Expired:
		return 2
	}
	return 0
}

// Warning is the text a cluster running version (canonical) on line l is
// told, for the Warning header (without its 299 agent prefix): "" when
// the line is supported.
func (l *Line) Warning(version string) string {
	if l == nil || l.Class == Supported {
		return ""
	}
	if l.warning == "" { // a Line not made by Build
		return version + l.warningText()
	}
	return version + l.warning
}

// warningText is Warning's text after the version.
func (l *Line) warningText() string {
	w := fmt.Sprintf(" is %s: its line %s ends %s", l.Class, l.Line, l.End.UTC().Format(time.DateOnly))
	if l.End.IsZero() {
		w = fmt.Sprintf(" is %s: its line %s has no end date yet", l.Class, l.Line)
	}
	if l.Successor != "" {
		w += "; move to " + l.Successor
	}
	return w
}
