package resolver

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestNewParser(t *testing.T) {
	tests := []struct {
		name      string
		scheme    Scheme
		pattern   string
		wantError string // "" means it builds
	}{
		{"juju builds", SchemeJuju, "", ""},
		{"semver without pattern builds", SchemeSemver, "", ""},
		{"k3s pattern builds", SchemeSemver, `k3s(\d+)`, ""},
		{"bracket digits build", SchemeSemver, `k3s([0-9]+)`, ""},
		{"alternation builds", SchemeSemver, `(?:k3s|rke2r)(\d+)`, ""},
		{"bounded repeat builds", SchemeSemver, `build\.?(\d{1,4})`, ""},
		{"unknown scheme is refused", "calver", "", `unknown scheme "calver"`},
		{"juju with pattern is refused", SchemeJuju, `k3s(\d+)`, "only the semver scheme"},
		{"bad regexp is refused", SchemeSemver, `k3s(\d+`, "missing closing )"},
		{"pattern without group is refused", SchemeSemver, `k3s\d+`, "needs a capture group"},
		{"non-digit group is refused", SchemeSemver, `k3s(\w+)`, "must match only digits"},
		{"empty-matching group is refused", SchemeSemver, `k3s(\d*)`, "must not match an empty string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewParser(tt.scheme, tt.pattern)
			if tt.wantError == "" {
				if err != nil {
					t.Fatalf("NewParser(%q, %q): %v", tt.scheme, tt.pattern, err)
				}
				if p.Scheme() != tt.scheme || p.BuildPattern() != tt.pattern {
					t.Errorf("parser has scheme %q pattern %q", p.Scheme(), p.BuildPattern())
				}
				return
			}
			if err == nil {
				t.Fatalf("NewParser(%q, %q) succeeded, want error %q", tt.scheme, tt.pattern, tt.wantError)
			}
			msg := err.Error()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(msg, tt.wantError) || strings.Contains(msg, "\n") ||
				(tt.pattern != "" && !strings.Contains(msg, "`"+tt.pattern+"`")) {
				t.Errorf("error %q: want one line wrapping ErrInvalid, naming the pattern, containing %q", msg, tt.wantError)
			}
		})
	}
}

// TestBuildPatternShapes runs the regexp path (patterns that are not a
// literal followed by (\d+)) against the hand-written one.
func TestBuildPatternShapes(t *testing.T) {
	tests := []struct {
		pattern, tag, want string
		build              int
	}{
		{`k3s([0-9]+)`, "v1.2.3-k3s4", "v1.2.3+k3s4", 4},
		{`(?:k3s|rke2r)(\d+)`, "v1.2.3-rke2r7", "v1.2.3+rke2r7", 7},
		{`(?:k3s|rke2r)(\d+)`, "v1.2.3-rc1+k3s2", "v1.2.3-rc1+k3s2", 2},
		{`build\.?(\d{1,4})`, "1.0.0-build.12", "1.0.0+build.12", 12},
		{`build\.?(\d{1,4})`, "1.0.0-build.12345", "1.0.0-build.12345", 0},
		{`(\d+)`, "1.0.0-1-2", "1.0.0-1+2", 2},
		{`(?i)K3S(\d+)`, "v1.2.3-k3s5", "v1.2.3+k3s5", 5},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"/"+tt.tag, func(t *testing.T) {
			p := MustParser(SchemeSemver, tt.pattern)
			v := mustParse(t, p, tt.tag)
			if v.String() != tt.want || v.Build != tt.build {
				t.Errorf("Parse(%q) = %q build %d, want %q build %d", tt.tag, v, v.Build, tt.want, tt.build)
			}
		})
	}
}

func TestStreamOf(t *testing.T) {
	custom := Labels{"": Released, "rc": Proposed, "beta": Proposed, "alpha": Devel}
	tests := []struct {
		parser *Parser
		tag    string
		labels Labels
		want   Stream
	}{
		{jujuParser, "2.9.1", nil, Released},
		{jujuParser, "2.9.1.3", nil, Released},
		{jujuParser, "2.9-rc1", nil, Proposed},
		{jujuParser, "2.9-beta1", nil, Devel},
		{jujuParser, "2.9-alpha1", nil, Testing},
		{jujuParser, "2.9-alpha1", custom, Devel},
		{jujuParser, "2.9-beta1", custom, Proposed},
		{jujuParser, "2.9-dev1", custom, Testing},
		{k3sParser, "v1.33.6-k3s1", nil, Released},
		{k3sParser, "v1.33.6-rc1-k3s1", nil, Proposed},
		{k3sParser, "v1.32.5-k3s1-amd64", nil, Testing},
		{semverParser, "v1.33.6+k3s1", nil, Released},
		{semverParser, "1.0.0-beta.2", nil, Devel},
		{semverParser, "1.0.0-1", nil, Testing},
		{semverParser, "1.0.0--rc", custom, Testing},
	}
	for _, tt := range tests {
		t.Run(tt.tag+"_is_"+tt.want.String(), func(t *testing.T) {
			if got := tt.labels.StreamOf(mustParse(t, tt.parser, tt.tag)); got != tt.want {
				t.Errorf("StreamOf(%s) = %s, want %s", tt.tag, got, tt.want)
			}
		})
	}
}

func TestCompareAcrossSchemes(t *testing.T) {
	j, s := mustParse(t, jujuParser, "9.9.9"), mustParse(t, semverParser, "1.0.0")
	if Compare(j, s) >= 0 || Compare(s, j) <= 0 {
		t.Errorf("juju versions must order before semver ones (by scheme name)")
	}
	if Compare(Version{}, Version{}) != 0 || !(Version{}).IsZero() || j.IsZero() {
		t.Errorf("zero versions: Compare or IsZero wrong")
	}
}

// jujuOracle is juju's own regexp, the reference the hand-written scanner
// must agree with on every input.
var jujuOracle = regexp.MustCompile(`^(\d{1,9})\.(\d{1,9})(?:\.|-([a-z]+))(\d{1,9})(\.\d{1,9})?$`)

// semverOracle is semver.org's regexp with an optional "v".
var semverOracle = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// checkVersions checks, for tags parsed by p, that errors are well formed,
// canonical strings re-parse to the same version, and Compare is a total
// order on the valid ones.
func checkVersions(t *testing.T, p *Parser, tags ...string) []Version {
	t.Helper()
	var vs []Version
	for _, tag := range tags {
		v, err := p.Parse(tag)
		if err != nil {
			if !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "\n") || !v.IsZero() {
				t.Fatalf("Parse(%q): bad error %q or non-zero version", tag, err)
			}
			continue
		}
		w, err := p.Parse(v.String())
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not re-parse: %v", tag, v, err)
		}
		if Compare(v, w) != 0 || w.String() != v.String() ||
			partsOf(v) != partsOf(w) {
			t.Fatalf("Parse(%q) = %#v, re-parsed %#v", tag, v, w)
		}
		vs = append(vs, v)
	}
	for _, a := range vs {
		for _, b := range vs {
			ab, ba := Compare(a, b), Compare(b, a)
			if ab != -ba || ab < -1 || ab > 1 {
				t.Fatalf("Compare(%q, %q) = %d but reversed %d", a, b, ab, ba)
			}
			if (ab == 0) != (a.String() == b.String()) {
				t.Fatalf("Compare(%q, %q) = %d disagrees with string equality", a, b, ab)
			}
			for _, c := range vs {
				if ab <= 0 && Compare(b, c) <= 0 && Compare(a, c) > 0 {
					t.Fatalf("not transitive: %q <= %q <= %q but %q > %q", a, b, c, a, c)
				}
			}
		}
	}
	return vs
}

func FuzzJuju(f *testing.F) {
	for _, s := range [][3]string{
		{"2.9.1", "2.9-rc1", "2.9-beta1.1"},
		{"01.0.0", "1.0.0", "1.0.0.0"},
		{"2.8", "v2.8.1", "2.8.1-focal-amd64"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkVersions(t, jujuParser, a, b, c)
		for _, tag := range []string{a, b, c} {
			_, err := jujuParser.Parse(tag)
			if m := jujuOracle.MatchString(tag); m != (err == nil) {
				t.Fatalf("Parse(%q) error %v, but juju's regexp match is %v", tag, err, m)
			}
		}
	})
}

func FuzzSemver(f *testing.F) {
	for _, s := range [][3]string{
		{"v1.33.6-k3s1", "v1.33.6+k3s2", "v1.34.0-rc1-k3s1"},
		{"1.0.0-rc9", "1.0.0-rc10", "1.0.0-rc1x"},
		{"1.2.3.4", "1.0.0+meta-k3s1", "1.0.0--k3s1"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		checkVersions(t, semverParser, a, b, c)
		checkVersions(t, k3sParser, a, b, c)
		for _, tag := range []string{a, b, c} {
			_, err := semverParser.Parse(tag)
			m := semverOracle.MatchString(tag)
			if m != (err == nil) && !(m && errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), "longer than 18 digits")) {
				t.Fatalf("Parse(%q) error %v, but semver.org's regexp match is %v", tag, err, m)
			}
		}
	})
}

func TestParseAllocations(t *testing.T) {
	tests := []struct {
		parser *Parser
		tag    string
		want   float64
	}{
		{jujuParser, "2.9.42", 0},
		{jujuParser, "3.1-beta2.4", 0},
		{jujuParser, "02.9.42", 1}, // canonical string differs from the tag
		{semverParser, "v1.34.0-rc.1+meta", 0},
		{k3sParser, "v1.33.6+k3s1", 0},
		{k3sParser, "v1.33.6-k3s1", 1}, // canonical "+k3s1"
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			got := testing.AllocsPerRun(100, func() {
				if _, err := tt.parser.Parse(tt.tag); err != nil {
					t.Fatal(err)
				}
			})
			if got != tt.want {
				t.Errorf("Parse(%q) makes %v allocations, want %v", tt.tag, got, tt.want)
			}
		})
	}
}

func TestParseErrorQuotesTag(t *testing.T) {
	for _, tag := range []string{"2.9.1", `2.9"1`, "2.9\\1", "2.9\n1", "2.9.é", "\x00"} {
		_, err := semverParser.Parse(tag + "x")
		if want := strconv.Quote(tag+"x") + ": "; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Parse(%q) error %v, want prefix %s", tag+"x", err, want)
		}
	}
}
