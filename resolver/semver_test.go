package resolver

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var (
	semverParser = MustParser(SchemeSemver, "")
	k3sParser    = MustParser(SchemeSemver, `k3s(\d+)`)
)

func TestSemverParse(t *testing.T) {
	tests := []struct {
		parser    *Parser
		tag       string
		want      parts
		wantStr   string // "" means the tag itself
		wantError string
	}{
		{parser: semverParser, tag: "1.2.3", want: parts{Major: 1, Minor: 2, Patch: 3}},
		{parser: semverParser, tag: "v1.2.3", want: parts{Major: 1, Minor: 2, Patch: 3}},
		{parser: semverParser, tag: "0.0.0", want: parts{}},
		{parser: semverParser, tag: "1.0.0-alpha.1", want: parts{Major: 1, Pre: "alpha", PreNumber: 1, Prerelease: "alpha.1"}},
		{parser: semverParser, tag: "1.0.0-rc1", want: parts{Major: 1, Pre: "rc", PreNumber: 1, Prerelease: "rc1"}},
		{parser: semverParser, tag: "1.0.0-rc.2", want: parts{Major: 1, Pre: "rc", PreNumber: 2, Prerelease: "rc.2"}},
		{parser: semverParser, tag: "1.0.0-beta", want: parts{Major: 1, Pre: "beta", Prerelease: "beta"}},
		{parser: semverParser, tag: "1.0.0-1", want: parts{Major: 1, PreNumber: 1, Prerelease: "1"}},
		{parser: semverParser, tag: "1.0.0-x-y.0.a-", want: parts{Major: 1, Pre: "x", Prerelease: "x-y.0.a-"}},
		{parser: semverParser, tag: "1.0.0+20130313144700", want: parts{Major: 1, BuildMeta: "20130313144700"}},
		{parser: semverParser, tag: "1.0.0-beta+exp.sha.5114f85", want: parts{Major: 1, Pre: "beta", Prerelease: "beta", BuildMeta: "exp.sha.5114f85"}},
		// Without a build pattern k3s suffixes are just semver.
		{parser: semverParser, tag: "v1.33.6-k3s1", want: parts{Major: 1, Minor: 33, Patch: 6, Pre: "k", Prerelease: "k3s1"}},
		{parser: semverParser, tag: "v1.33.6+k3s1", want: parts{Major: 1, Minor: 33, Patch: 6, BuildMeta: "k3s1"}},
		{parser: k3sParser, tag: "v1.33.6-k3s1", want: parts{Major: 1, Minor: 33, Patch: 6, Build: 1, BuildMeta: "k3s1"}, wantStr: "v1.33.6+k3s1"},
		{parser: k3sParser, tag: "v1.33.6+k3s1", want: parts{Major: 1, Minor: 33, Patch: 6, Build: 1, BuildMeta: "k3s1"}},
		{parser: k3sParser, tag: "v1.34.0-rc1-k3s1", want: parts{Major: 1, Minor: 34, Pre: "rc", PreNumber: 1, Prerelease: "rc1", Build: 1, BuildMeta: "k3s1"}, wantStr: "v1.34.0-rc1+k3s1"},
		{parser: k3sParser, tag: "v1.34.0-rc1+k3s12", want: parts{Major: 1, Minor: 34, Pre: "rc", PreNumber: 1, Prerelease: "rc1", Build: 12, BuildMeta: "k3s12"}},
		// Not at the end: a pre-release, not a build.
		{parser: k3sParser, tag: "v1.32.5-k3s1-amd64", want: parts{Major: 1, Minor: 32, Patch: 5, Pre: "k", Prerelease: "k3s1-amd64"}},
		// Metadata before the suffix: the whole "+..." is metadata.
		{parser: k3sParser, tag: "v1.0.0+meta-k3s1", want: parts{Major: 1, BuildMeta: "meta-k3s1"}},
		// Nothing before the suffix: "-k3s1" is the pre-release.
		{parser: k3sParser, tag: "1.0.0--k3s1", want: parts{Major: 1, Prerelease: "-k3s1"}},
		{parser: semverParser, tag: "1.2.3.4", wantError: "a fourth is not semver"},
		{parser: k3sParser, tag: "v1.2.3.4-k3s1", wantError: "a fourth is not semver"},
		{parser: semverParser, tag: "1.2", wantError: "needs major.minor.patch"},
		{parser: semverParser, tag: "01.2.3", wantError: "leading zero"},
		{parser: semverParser, tag: "1.02.3", wantError: "leading zero"},
		{parser: semverParser, tag: "1.0.0-01", wantError: "leading zero"},
		{parser: semverParser, tag: "1.0.0-", wantError: "pre-release"},
		{parser: semverParser, tag: "1.0.0-a..b", wantError: "pre-release"},
		{parser: semverParser, tag: "1.0.0-a_b", wantError: "pre-release"},
		{parser: semverParser, tag: "1.0.0+", wantError: "build metadata"},
		{parser: semverParser, tag: "1.0.0+a+b", wantError: "build metadata"},
		{parser: semverParser, tag: "V1.0.0", wantError: "needs major.minor.patch"},
		{parser: semverParser, tag: "vv1.0.0", wantError: "needs major.minor.patch"},
		{parser: semverParser, tag: "1.0.0 ", wantError: `trailing " "`},
		{parser: semverParser, tag: "latest", wantError: "needs major.minor.patch"},
		{parser: semverParser, tag: "", wantError: "empty tag"},
		{parser: semverParser, tag: "1234567890123456789.0.0", wantError: "longer than 18 digits"},
		{parser: k3sParser, tag: "v1.0.0-k3s1234567890123456789", wantError: "build number longer than 18 digits"},
	}
	for _, tt := range tests {
		name := tt.parser.BuildPattern() + "/" + tt.tag
		if tt.wantError != "" {
			name += "_is_invalid"
		}
		t.Run(name, func(t *testing.T) {
			checkParse(t, tt.parser, tt.tag, tt.want, tt.wantStr, tt.wantError)
		})
	}
}

// TestSemverOrder sorts shuffled tags and checks the whole ascending order:
// semver precedence (spec section 11's chain included), rc9 < rc10, builds.
func TestSemverOrder(t *testing.T) {
	tests := []struct {
		name   string
		parser *Parser
		sorted []string
	}{
		{"semver spec precedence chain", semverParser, []string{
			"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
			"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "2.0.0", "2.1.0", "2.1.1",
		}},
		{"letters then digits compare numerically", semverParser, []string{
			"1.0.0-alpha1", "1.0.0-alpha2", "1.0.0-alpha10", "1.0.0-beta9", "1.0.0-beta10",
			"1.0.0-rc1", "1.0.0-rc9", "1.0.0-rc10", "1.0.0-rc10.1", "1.0.0",
		}},
		{"numeric identifiers below alphanumeric", semverParser, []string{
			"1.0.0-1", "1.0.0-2", "1.0.0-10", "1.0.0-a", "1.0.0",
		}},
		{"metadata breaks ties only", semverParser, []string{
			"1.0.0", "1.0.0+a", "1.0.0+b", "v1.0.0", "1.0.1",
		}},
		{"k3s builds", k3sParser, []string{
			"v1.33.5+k3s2", "v1.33.6-rc1+k3s1", "v1.33.6-rc1-k3s2", "v1.33.6-rc2-k3s1",
			"v1.33.6-k3s1", "v1.33.6+k3s2", "v1.33.6-k3s10", "v1.34.0-rc1-k3s1", "v1.34.0+k3s1",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := make([]Version, len(tt.sorted))
			for i, tag := range tt.sorted {
				vs[i] = mustParse(t, tt.parser, tag)
			}
			r := rand.New(rand.NewPCG(1, 2))
			for range 20 {
				shuffled := slices.Clone(vs)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				slices.SortFunc(shuffled, Compare)
				got := make([]string, len(shuffled))
				want := make([]string, len(vs))
				for i := range shuffled {
					got[i], want[i] = shuffled[i].String(), vs[i].String()
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("sorted order mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestCompareIdentTransitive checks the identifier order is a total order on
// awkward identifiers. Special-casing only exact letters+digits identifiers
// would fail here: rc10 > rc9 by value, rc9 > rc1x and rc1x > rc10 by ASCII.
func TestCompareIdentTransitive(t *testing.T) {
	ids := []string{"rc", "rc-x", "rc1", "rc1x", "rc01", "rc9", "rc10", "rc10-", "rcx", "k3s1", "k3s1-amd64", "k10s", "1a", "10a", "-", "-1", "A1", "a1"}
	for _, a := range ids {
		for _, b := range ids {
			if compareIdent(a, b) != -compareIdent(b, a) {
				t.Errorf("compareIdent(%q, %q) not antisymmetric", a, b)
			}
			for _, c := range ids {
				if compareIdent(a, b) <= 0 && compareIdent(b, c) <= 0 && compareIdent(a, c) > 0 {
					t.Errorf("%q <= %q <= %q but %q > %q", a, b, c, a, c)
				}
			}
		}
	}
	if compareIdent("rc1x", "rc9") >= 0 || compareIdent("rc9", "rc10") >= 0 {
		t.Errorf("want rc1x < rc9 < rc10")
	}
}

// checkParse is the one assertion of the parse tables of both schemes: a
// version equal to want (its scheme filled in) printing as wantStr (default:
// the tag), or a one-line error naming the tag, wrapping ErrInvalid and
// containing wantError.
// parts is what a test states of a Version: its fields and the text parts
// its methods read from the canonical string.
type parts struct {
	Scheme              Scheme
	Major, Minor, Patch int
	Pre                 string
	PreNumber           int
	Prerelease          string
	Build               int
	BuildMeta           string
}

func partsOf(v Version) parts {
	return parts{v.Scheme(), v.Major, v.Minor, v.Patch, v.Pre(), v.PreNumber, v.Prerelease(), v.Build, v.BuildMeta()}
}

func checkParse(t *testing.T, p *Parser, tag string, want parts, wantStr, wantError string) {
	t.Helper()
	got, err := p.Parse(tag)
	if wantError != "" {
		if err == nil {
			t.Fatalf("Parse(%q) = %v, want error %q", tag, got, wantError)
		}
		msg := err.Error()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(msg, wantError) || !strings.HasPrefix(msg, `"`) || strings.Contains(msg, "\n") {
			t.Errorf("Parse(%q) error %q, want one line naming the tag, wrapping ErrInvalid, containing %q", tag, err, wantError)
		}
		return
	}
	if err != nil {
		t.Fatalf("Parse(%q): %v", tag, err)
	}
	want.Scheme = p.Scheme()
	if diff := cmp.Diff(want, partsOf(got)); diff != "" {
		t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tag, diff)
	}
	if wantStr == "" {
		wantStr = tag
	}
	if got.String() != wantStr {
		t.Errorf("Parse(%q).String() = %q, want %q", tag, got.String(), wantStr)
	}
}

// TestParseAtTheLengthLimit: a Version keeps its text parts as 16-bit spans
// of the canonical string, so a tag of MaxVersionLen bytes parses whole and a
// longer one is refused with a short error (no OCI tag is over 128 bytes).
func TestParseAtTheLengthLimit(t *testing.T) {
	for _, p := range []*Parser{semverParser, MustParser(SchemeSemver, `k3s(\d+)`)} {
		pre := strings.Repeat("a", MaxVersionLen-len("1.0.0-")-len("-k3s1"))
		tag := "1.0.0-" + pre + "-k3s1"
		v, err := p.Parse(tag)
		if err != nil {
			t.Fatalf("Parse(%d bytes): %v", len(tag), err)
		}
		wantPre, wantMeta := pre+"-k3s1", ""
		if p.BuildPattern() != "" {
			wantPre, wantMeta = pre, "k3s1"
		}
		if v.Prerelease() != wantPre || v.BuildMeta() != wantMeta || v.Pre() != wantPre[:len(pre)] {
			t.Errorf("Parse(%d bytes, build %q): prerelease %d bytes, meta %q, want %d and %q",
				len(tag), p.BuildPattern(), len(v.Prerelease()), v.BuildMeta(), len(wantPre), wantMeta)
		}
		_, err = p.Parse(tag + "1")
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "longer than 65535 bytes") || len(err.Error()) > 128 {
			t.Errorf("Parse(%d bytes) = %v, want a short error saying it is longer than 65535 bytes", len(tag)+1, err)
		}
	}
	if _, err := jujuParser.Parse(strings.Repeat("1", MaxVersionLen+1)); err == nil || !strings.Contains(err.Error(), "longer than 65535 bytes") {
		t.Errorf("juju Parse(65536 bytes) = %v, want longer than 65535 bytes", err)
	}
}
