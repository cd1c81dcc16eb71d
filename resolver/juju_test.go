package resolver

import (
	"testing"
)

var jujuParser = MustParser(SchemeJuju, "")

func mustParse(t testing.TB, p *Parser, tag string) Version {
	t.Helper()
	v, err := p.Parse(tag)
	if err != nil {
		t.Fatalf("Parse(%q): %v", tag, err)
	}
	return v
}

// TestJujuCompare is juju/version's TestCompare, case for case.
func TestJujuCompare(t *testing.T) {
	tests := []struct {
		v1, v2 string
		want   int
	}{
		{"1.0.0", "1.0.0", 0},
		{"01.0.0", "1.0.0", 0},
		{"10.0.0", "9.0.0", 1},
		{"1.0.0", "1.0.1", -1},
		{"1.0.1", "1.0.0", 1},
		{"1.0.0", "1.1.0", -1},
		{"1.1.0", "1.0.0", 1},
		{"1.0.0", "2.0.0", -1},
		{"1.2-alpha1", "1.2.0", -1},
		{"1.2-alpha2", "1.2-alpha1", 1},
		{"1.2-alpha2.1", "1.2-alpha2", 1},
		{"1.2-alpha2.2", "1.2-alpha2.1", 1},
		{"1.2-beta1", "1.2-alpha1", 1},
		{"1.2-beta1", "1.2-alpha2.1", 1},
		{"1.2-beta1", "1.2.0", -1},
		{"1.2.1", "1.2.0", 1},
		{"2.0.0", "1.0.0", 1},
		{"2.0.0.0", "2.0.0", 0},
		{"2.0.0.0", "2.0.0.0", 0},
		{"2.0.0.1", "2.0.0.0", 1},
		{"2.0.1.10", "2.0.0.0", 1},
		// Beyond juju's table: tags compare as strings, then the tag number.
		{"2.9-rc1", "2.9-beta9", 1},
		{"2.9-beta10", "2.9-beta9", 1},
		{"2.9-rc1", "2.9.0", -1},
		{"2.9.0", "2.9.0.1", -1},
		{"2.8.9", "2.9-alpha1", -1},
		{"2.9-alpha1.7", "2.9-alpha2", -1},
	}
	for _, tt := range tests {
		t.Run(tt.v1+"_vs_"+tt.v2, func(t *testing.T) {
			a, b := mustParse(t, jujuParser, tt.v1), mustParse(t, jujuParser, tt.v2)
			if got := Compare(a, b); got != tt.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.v1, tt.v2, got, tt.want)
			}
			if got := Compare(b, a); got != -tt.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.v2, tt.v1, got, -tt.want)
			}
		})
	}
}

// TestJujuParse is juju/version's TestParse (juju's Tag/Patch mapped onto
// Pre/PreNumber), plus the strictness cases of the contract.
func TestJujuParse(t *testing.T) {
	tests := []struct {
		tag       string
		want      parts  // canonical ignored; checked through wantString
		wantStr   string // "" means the tag itself
		wantError string // substring of the error; "" means valid
	}{
		{tag: "0.0.0", want: parts{}},
		{tag: "0.0.1", want: parts{Patch: 1}},
		{tag: "0.0.2", want: parts{Patch: 2}},
		{tag: "0.1.0", want: parts{Minor: 1}},
		{tag: "0.2.3", want: parts{Minor: 2, Patch: 3}},
		{tag: "1.0.0", want: parts{Major: 1}},
		{tag: "10.234.3456", want: parts{Major: 10, Minor: 234, Patch: 3456}},
		{tag: "10.234.3456.1", want: parts{Major: 10, Minor: 234, Patch: 3456, Build: 1}},
		{tag: "10.234.3456.64", want: parts{Major: 10, Minor: 234, Patch: 3456, Build: 64}},
		{tag: "10.235.3456", want: parts{Major: 10, Minor: 235, Patch: 3456}},
		{tag: "1.21-alpha1", want: parts{Major: 1, Minor: 21, Pre: "alpha", PreNumber: 1, Prerelease: "alpha1"}},
		{tag: "1.21-alpha1.1", want: parts{Major: 1, Minor: 21, Pre: "alpha", PreNumber: 1, Prerelease: "alpha1", Build: 1}},
		{tag: "1.21-alpha10", want: parts{Major: 1, Minor: 21, Pre: "alpha", PreNumber: 10, Prerelease: "alpha10"}},
		{tag: "1.21.0", want: parts{Major: 1, Minor: 21}},
		{tag: "2.8-beta1.1", want: parts{Major: 2, Minor: 8, Pre: "beta", PreNumber: 1, Prerelease: "beta1", Build: 1}},
		{tag: "999999999.999999999.999999999.999999999", want: parts{Major: 999999999, Minor: 999999999, Patch: 999999999, Build: 999999999}},
		// Leading zeros parse and print without; a zero build is no build.
		{tag: "01.0.0", want: parts{Major: 1}, wantStr: "1.0.0"},
		{tag: "2.0.0.0", want: parts{Major: 2}, wantStr: "2.0.0"},
		{tag: "2.08-rc007.00", want: parts{Major: 2, Minor: 8, Pre: "rc", PreNumber: 7, Prerelease: "rc7"}, wantStr: "2.8-rc7"},
		{tag: "1234567890.2.1", wantError: "longer than 9 digits"},
		{tag: "0.2..1", wantError: "needs major.minor.patch"},
		{tag: "1.21.alpha1", wantError: "needs major.minor.patch"},
		{tag: "1.21-alpha", wantError: "lowercase letters then a number"},
		{tag: "1.21-alpha1beta", wantError: `trailing "beta"`},
		{tag: "1.21-alpha-dev", wantError: "lowercase letters then a number"},
		{tag: "1.21-alpha_dev3", wantError: "lowercase letters then a number"},
		{tag: "1.21-alpha123dev3", wantError: `trailing "dev3"`},
		{tag: "2.8", wantError: `"2.8": juju version needs major.minor.patch or major.minor-tagN`},
		{tag: "v2.8.1", wantError: `no "v" prefix`},
		{tag: "2.8-Beta1", wantError: "lowercase letters then a number"},
		{tag: "2.8.1-focal-amd64", wantError: `trailing "-focal-amd64"`},
		{tag: "2.8.1.2.3", wantError: `trailing ".3"`},
		{tag: "2.8.1.", wantError: "needs major.minor.patch"},
		{tag: "", wantError: "empty tag"},
		{tag: "latest", wantError: "needs major.minor.patch"},
		{tag: "2.9.٣", wantError: "needs major.minor.patch"},
		{tag: " 2.9.1", wantError: "needs major.minor.patch"},
	}
	for _, tt := range tests {
		name := tt.tag
		if tt.wantError != "" {
			name += "_is_invalid"
		}
		t.Run(name, func(t *testing.T) {
			checkParse(t, jujuParser, tt.tag, tt.want, tt.wantStr, tt.wantError)
		})
	}
}
