package catalog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
)

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
	for _, text := range testutil.Lines(t, filepath.Join("testdata", "constraints.txt")) {
		t.Run(text+" agrees with Masterminds", func(t *testing.T) {
			c, err := compileConstraint(text)
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if c.fallback != nil {
				t.Fatalf("falls back to Masterminds; want it compiled")
			}
			ms := testutil.Constraint(t, text)
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
	for i, text := range testutil.Lines(f, filepath.Join("testdata", "constraints.txt")) {
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
	pre := testutil.Constraint(t, "~1.33")
	pre.IncludePrerelease = true
	cases := []struct {
		name         string
		ch           Channel
		wantNil      bool
		wantFallback bool
		wantPre      bool
	}{
		{name: "no constraint compiles to nothing", ch: Channel{ConstraintText: "~1.2"}, wantNil: true},
		{name: "text matching the constraint compiles", ch: Channel{Constraint: testutil.Constraint(t, "~1.33"), ConstraintText: "~1.33"}},
		{name: "text disagreeing with the constraint keeps Masterminds", ch: Channel{Constraint: testutil.Constraint(t, "~1.33"), ConstraintText: ">=3"}, wantFallback: true},
		{name: "missing text keeps Masterminds", ch: Channel{Constraint: testutil.Constraint(t, "~1.33")}, wantFallback: true},
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
	if _, err := cc.Get(huge); !errors.Is(err, resolver.ErrInvalid) {
		t.Errorf("a %d-byte constraint: err %v, want ErrInvalid", len(huge), err)
	}
	if _, ok := cc.m[huge]; ok || len(cc.m) > before {
		t.Error("an over-long constraint was cached")
	}
}
