package testutil

import (
	"os"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// Constraint parses text as a Masterminds constraint, the reference the
// compiled constraints and the configuration are checked against.
func Constraint(t testing.TB, text string) *semver.Constraints {
	t.Helper()
	c, err := semver.NewConstraint(text)
	if err != nil {
		t.Fatalf("constraint %q: %v", text, err)
	}
	return c
}

// Lines is the file at path a line each, without blank lines and lines
// starting with "#" (a table of test inputs).
func Lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
