package resolver

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// constraintTable is Masterminds' grammar as channels and clients write it,
// plus the corners where its semantics are surprising.
var constraintTable = []string{
	"1.2.3", "=1.2.3", "v1.2.3", "=v1.2.3", "1.2.3+build.5", "=1.2.3-rc1", "1.2.3-rc.1",
	"!=1.2.3", "!=1.2.3-rc.1", "!=1.x", "!=1.2.x", "!=1.2.x-rc1", "!=*", "!=1", "!=1.2",
	">1.2.3", ">1.2", ">1", ">1.x", ">1.2.x", ">*", ">1.2-0", ">1.2.3-alpha.1", ">0.0.0-0",
	"<1.2.3", "<1.2", "<1", "<1.x", "<2.0.0-0", "<1.2.3-rc.2",
	">=1.2.3", "=>1.2", ">=1", ">=1.x", ">= 1.2.0-0", ">=1.0.0-rc.1",
	"<=1.2.3", "=<1.2", "<=1", "<=1.x", "<=1.2.x", "<=0.x",
	"~1.2.3", "~1.2", "~1", "~>1.2", "~>1.2.3", "~0", "~0.0", "~0.0.0", "~*", "~1.x", "~1.2.x", "~1.2.3-beta.2", "~2.9",
	"^1.2.3", "^1.2", "^1", "^0.2.3", "^0.2", "^0.0.3", "^0.0", "^0", "^*", "^0.x", "^0.0.x", "^1.2.3-beta.2", "^0.0.3-rc1",
	"1.2.x", "1.x", "1.X", "1.2.*", "*", "x", "X", "1.x.3", "x.2.3", "1.2.x-rc1",
	"1.2 - 1.4.5", "1 - 2", "1.2.3-rc1 - 1.4", "1.x - 2.x", "0.1 - 3.0.0-0",
	">=1.2, <2", ">=1.2 <2", ">= 1.2.0-0 < 1.3.0", ">=1.0.0-rc.1 <1.0.0", ">=2.9.11-0 <3.0.1-0",
	"~1.2 || ^2.1", "1.2.3-rc1 || 2.x", "<1 || >=2.0.0-0 <2.1", "~1.32 || ~1.34.0-0", "!=1.2.3 !=1.2.4 >=1.2",
	">1.0.0-alpha.beta <1.0.0-rc", ">=1.0.0-x-y", "<=1.2.3-alpha.10", "=1.2.3-1.2",
}

// constraintVersions is a version set that straddles every comparator in
// the table: releases and prereleases of every shape Masterminds compares
// specially (numeric parts, leading zeros, more parts, hyphens).
func constraintVersions() []cver {
	pres := []string{"", "0", "1", "01", "10", "rc1", "rc.1", "rc.2", "rc.10", "beta1", "beta.2", "alpha", "alpha.1", "alpha.beta", "x-y", "1.2"}
	var vs []cver
	for _, major := range []uint64{0, 1, 2, 3} {
		for _, minor := range []uint64{0, 1, 2, 3, 4, 10} {
			for _, patch := range []uint64{0, 1, 2, 3, 4, 5} {
				for _, pre := range pres {
					vs = append(vs, cver{major, minor, patch, pre})
				}
			}
		}
	}
	return vs
}

func mmCheck(ms *semver.Constraints, v cver) bool {
	return ms.Check(semver.New(v.major, v.minor, v.patch, v.pre, ""))
}

// TestConstraintMatchesMasterminds is the differential test: every
// constraint in the table compiles (no fallback) and agrees with
// Masterminds on every version, with IncludePrerelease off and on.
func TestConstraintMatchesMasterminds(t *testing.T) {
	vs := constraintVersions()
	for _, text := range constraintTable {
		t.Run(text+" agrees with Masterminds", func(t *testing.T) {
			c, err := compileConstraint(text)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if c.fallback != nil {
				t.Fatalf("falls back to Masterminds; want it compiled")
			}
			ms := mustConstraint(t, text)
			for _, includePre := range []bool{false, true} {
				ms.IncludePrerelease, c.includePre = includePre, includePre
				bad := 0
				for i := range vs {
					if got, want := c.checkC(&vs[i]), mmCheck(ms, vs[i]); got != want && bad < 5 {
						bad++
						t.Errorf("includePre=%v %v: got %v, Masterminds %v", includePre, vs[i], got, want)
					}
					if v := &vs[i]; c.checkC(v) && !c.mayMatchMinor(v.major, v.minor) && bad < 5 {
						bad++
						t.Errorf("includePre=%v %v matches, but mayMatchMinor rules out its minor", includePre, vs[i])
					}
				}
			}
		})
	}
}

func TestCompileConstraintErrors(t *testing.T) {
	for _, text := range []string{"", "1.2.3.4", ">=a", "1.2 -", "~1.2 ||| 2", "1.2.3 || ", "= =1", "<=1.2.3-01", strings.Repeat("1||", 40) + "1"} {
		t.Run(fmt.Sprintf("%q is rejected like Masterminds", text), func(t *testing.T) {
			_, mErr := semver.NewConstraint(text)
			_, err := compileConstraint(text)
			if mErr == nil || err == nil || err.Error() != mErr.Error() {
				t.Errorf("error %v, Masterminds %v: want both, equal", err, mErr)
			}
		})
	}
}

// FuzzConstraint: whenever Masterminds parses a constraint, the compiled
// form agrees with Masterminds' Check on the fuzzed version and on versions
// next to every number the constraint mentions.
func FuzzConstraint(f *testing.F) {
	for i, text := range constraintTable {
		f.Add(text, uint8(i%4), uint8(i%11), uint64(i%6), []string{"", "rc1", "0", "alpha.1"}[i%4])
	}
	f.Fuzz(func(t *testing.T, text string, major, minor uint8, patch uint64, pre string) {
		ms, mErr := semver.NewConstraint(text)
		c, err := compileConstraint(text)
		if (mErr == nil) != (err == nil) {
			t.Fatalf("%q: error %v, Masterminds %v", text, err, mErr)
		}
		if err != nil {
			return
		}
		vs := []cver{{uint64(major), uint64(minor), patch, pre}}
		// Neighbours of the first few comparators only: Masterminds' Check
		// is slow enough that long constraints would stall the fuzzer.
		terms := 0
		for _, g := range c.groups {
			for _, term := range g.terms {
				if terms++; terms > 6 {
					break
				}
				for _, d := range [][3]uint64{{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}} {
					for _, p := range []string{"", term.pre, "0", pre} {
						vs = append(vs, cver{term.major + d[0], term.minor + d[1], term.patch + d[2], p})
						if d != [3]uint64{} && term.major >= d[0] && term.minor >= d[1] && term.patch >= d[2] {
							vs = append(vs, cver{term.major - d[0], term.minor - d[1], term.patch - d[2], p})
						}
					}
				}
			}
		}
		for _, includePre := range []bool{false, true} {
			ms.IncludePrerelease, c.includePre = includePre, includePre
			for i := range vs {
				if got, want := c.checkC(&vs[i]), mmCheck(ms, vs[i]); got != want {
					t.Fatalf("%q includePre=%v on %v: got %v, Masterminds %v (fallback %v)", text, includePre, vs[i], got, want, c.fallback != nil)
				}
				if v := &vs[i]; c.checkC(v) && !c.mayMatchMinor(v.major, v.minor) {
					t.Fatalf("%q includePre=%v: %v matches, but mayMatchMinor rules out its minor", text, includePre, vs[i])
				}
			}
		}
	})
}

func TestComparePreMatchesMasterminds(t *testing.T) {
	parts := []string{"", "0", "1", "01", "10", "18446744073709551615", "18446744073709551616", "a", "b", "a1", "-1", "+1", "1_0"}
	var pres []string
	for _, a := range parts {
		pres = append(pres, a)
		for _, b := range parts {
			pres = append(pres, a+"."+b)
		}
	}
	pres = append(pres, "a..b", ".", "..")
	for _, a := range pres {
		for _, b := range pres {
			if a == "" || b == "" {
				continue // Compare handles releases before comparePrerelease
			}
			va, vb := semver.New(1, 0, 0, a, ""), semver.New(1, 0, 0, b, "")
			if got, want := comparePre(a, b), va.Compare(vb); got != want {
				t.Errorf("comparePre(%q, %q) = %d, Masterminds %d", a, b, got, want)
			}
		}
	}
}

func TestChannelConstraint(t *testing.T) {
	pre := mustConstraint(t, "~1.33")
	pre.IncludePrerelease = true
	cases := []struct {
		name         string
		ch           Channel
		wantNil      bool
		wantFallback bool
		wantPre      bool
	}{
		{name: "no constraint compiles to nothing", ch: Channel{ConstraintText: "~1.2"}, wantNil: true},
		{name: "text matching the constraint compiles", ch: Channel{Constraint: mustConstraint(t, "~1.33"), ConstraintText: "~1.33"}},
		{name: "text disagreeing with the constraint keeps Masterminds", ch: Channel{Constraint: mustConstraint(t, "~1.33"), ConstraintText: ">=3"}, wantFallback: true},
		{name: "missing text keeps Masterminds", ch: Channel{Constraint: mustConstraint(t, "~1.33")}, wantFallback: true},
		{name: "IncludePrerelease carries over", ch: Channel{Constraint: pre, ConstraintText: "~1.33"}, wantPre: true},
	}
	vs := constraintVersions()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := channelConstraint(&tc.ch)
			if (c == nil) != tc.wantNil {
				t.Fatalf("compiled = %v, want nil: %v", c, tc.wantNil)
			}
			if c == nil {
				return
			}
			if (c.fallback != nil) != tc.wantFallback || c.includePre != tc.wantPre {
				t.Errorf("fallback %v includePre %v, want %v %v", c.fallback != nil, c.includePre, tc.wantFallback, tc.wantPre)
			}
			for i := range vs {
				if got, want := c.checkC(&vs[i]), mmCheck(tc.ch.Constraint, vs[i]); got != want {
					t.Fatalf("%v: got %v, the channel's Constraint says %v", vs[i], got, want)
				}
			}
		})
	}
	t.Run("compiling for a channel does not share state with IncludePrerelease", func(t *testing.T) {
		c, _ := compileConstraint("~1.33")
		if c.includePre {
			t.Error("compiled ~1.33 has includePre set")
		}
	})
}

func TestConstraintCacheIsBounded(t *testing.T) {
	var cc ConstraintCache
	first, err := cc.Get(">=1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := cc.Get(">=1.2.3"); again != first {
		t.Error("a repeated constraint was compiled again")
	}
	for i := range 3 * constraintCacheSize {
		_, _ = cc.Get(fmt.Sprintf(">=%d.0.%d", i, i))
		_, _ = cc.Get(fmt.Sprintf("bad %d", i))
	}
	if n := len(cc.m); n > constraintCacheSize {
		t.Errorf("cache holds %d constraints, bound is %d", n, constraintCacheSize)
	}
	if _, err := cc.Get("bad 1"); err == nil {
		t.Error("a bad constraint passed through the cache")
	}
	// Text over Masterminds' limit is refused up front and never kept.
	huge := ">=1.0.0 " + strings.Repeat("|| >=1.0.0 ", 100)
	before := len(cc.m)
	if _, err := cc.Get(huge); !errors.Is(err, ErrInvalid) {
		t.Errorf("a %d-byte constraint: err %v, want ErrInvalid", len(huge), err)
	}
	if _, ok := cc.m[huge]; ok || len(cc.m) > before {
		t.Error("an over-long constraint was cached")
	}
}

// refPick is Pick as it was before constraints were compiled: every version
// checked with Masterminds.
func refPick(c *Channel, versions []VersionView) int {
	f := Filter{Channel: c, Stream: c.Stream, Builds: c.Builds}
	for i := len(versions) - 1; i >= 0; i-- {
		v := &versions[i]
		if f.base(v) && f.regexps(v) && (c.Constraint == nil || c.Constraint.Check(constraintVersion(v.Version))) {
			return i
		}
	}
	return -1
}

// TestPickMatchesMasterminds runs every table constraint as a channel over
// the fixtures and k3s-shaped tags, with and without the index's keys.
func TestPickMatchesMasterminds(t *testing.T) {
	k3s := sourceData(t, "k3s-upgrade", mustParser(t, SchemeSemver, `k3s(\d+)`), benchK3sTags(600))
	s := NewSnapshot(nil, []SourceData{jujuData(t, "2.9.42"), k3sData(t), k3s}, nil, testTime)
	var texts []string
	texts = append(texts, constraintTable...)
	texts = append(texts, "~1.10", "~1.11.3", ">=1.12.0-0 <1.13", "1.10.x || 1.11.0-rc2")
	for _, idx := range s.sources {
		for _, text := range texts {
			for _, stream := range []Stream{Released, Testing} {
				c := Channel{Name: "c", Stream: stream, Constraint: mustConstraint(t, text), ConstraintText: text}
				want := refPick(&c, idx.versions)
				f := ChannelFilter(&c, testTime)
				if got := f.Pick(idx.versions, idx.keys); got != want {
					t.Errorf("%s %q on %s: keyed pick %d, Masterminds %d", idx.view.Source.Name, text, stream, got, want)
				}
				if got := f.Pick(idx.versions, nil); got != want {
					t.Errorf("%s %q on %s: pick %d, Masterminds %d", idx.view.Source.Name, text, stream, got, want)
				}
			}
		}
	}
}

// TestVersionsMatchMasterminds: the skipping scans Versions uses list
// exactly what Masterminds accepts.
func TestVersionsMatchMasterminds(t *testing.T) {
	k3s := sourceData(t, "k3s-upgrade", mustParser(t, SchemeSemver, `k3s(\d+)`), benchK3sTags(600))
	s := NewSnapshot(nil, []SourceData{jujuData(t), k3s}, nil, testTime)
	texts := append([]string{"~1.10", ">=1.12.0-0 <1.13", "1.10.x || 1.11.0-rc2", "2.9.x-0 || >3.0.0-beta1"}, constraintTable...)
	for _, src := range []string{"jujud-operator", "k3s-upgrade"} {
		all, err := s.Versions(src, Testing, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			for _, stream := range []Stream{Released, Testing} {
				ms := mustConstraint(t, text)
				var want []string
				for i := range all {
					if stream.Includes(all[i].Stream) && ms.Check(constraintVersion(all[i].Version)) {
						want = append(want, all[i].Version.String())
					}
				}
				got, err := s.Versions(src, stream, text)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, canons(got), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s %q on %s (-Masterminds +got):\n%s", src, text, stream, diff)
				}
			}
		}
	}
}

func TestConstraintPathsAllocateNothing(t *testing.T) {
	c := Channel{Name: "c", Source: "k3s-upgrade", Stream: Testing, Constraint: mustConstraint(t, "~1.10"), ConstraintText: "~1.10"}
	s := NewSnapshot([]Channel{c}, []SourceData{sourceData(t, "k3s-upgrade", mustParser(t, SchemeSemver, `k3s(\d+)`), benchK3sTags(1000))}, nil, testTime)
	idx := s.bySource["k3s-upgrade"]
	f := s.filters[0]
	for _, tc := range []struct {
		name string
		max  float64
		run  func()
	}{
		{"pick", 0, func() { f.Pick(idx.versions, idx.keys) }},
		{"Versions unfiltered", 0, func() { _, _ = s.Versions("k3s-upgrade", Testing, "") }},
		{"Versions filtered allocates the result only", 1, func() { _, _ = s.Versions("k3s-upgrade", Released, "~1.10 || >=1.15.2") }},
		// Only the error is built: the cache spares the parse (hundreds).
		{"Versions with a bad constraint (cached)", 8, func() { _, _ = s.Versions("k3s-upgrade", Released, "~1.10 |") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(20, tc.run); got > tc.max {
				t.Errorf("%v allocations, want at most %v", got, tc.max)
			}
		})
	}
}

// Requests compile and read constraints concurrently (run with -race).
func TestConstraintCacheConcurrent(t *testing.T) {
	s := testSnapshot(t, nil, nil)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				text := fmt.Sprintf("~1.%d || >=%d.0", i%40, g)
				if _, err := s.Versions("k3s-upgrade", Testing, text); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
