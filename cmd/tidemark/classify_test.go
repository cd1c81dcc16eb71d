package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/testutil"
)

func runMain(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errb, func(string) string { return "" })
	return code, out.String(), errb.String()
}

func TestClassifyAndSortGolden(t *testing.T) {
	tests := []struct {
		golden string
		input  string
		args   []string
	}{
		{"classify-juju", "juju.in", []string{"classify", "--scheme", "juju"}},
		{"classify-semver", "k3s.in", []string{"classify", "--scheme", "semver"}},
		{"classify-semver-k3s", "k3s.in", []string{"classify", "--scheme", "semver", "--build", `k3s(\d+)`}},
		{"classify-crlf-blank-lines-skipped", "crlf.in", []string{"classify", "--scheme=semver", `--build=k3s(\d+)`}},
		{"sort-juju", "juju.in", []string{"sort", "--scheme", "juju"}},
		{"sort-juju-canonical", "juju.in", []string{"sort", "--scheme", "juju", "--canonical"}},
		{"sort-semver-k3s", "k3s.in", []string{"sort", "--scheme", "semver", "--build", `k3s(\d+)`}},
		{"sort-semver-k3s-canonical", "k3s.in", []string{"sort", "--scheme", "semver", "--build", `k3s(\d+)`, "--canonical"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			in, err := os.ReadFile(filepath.Join("testdata", "classify", tt.input))
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runMain(t, string(in), tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			testutil.Golden(t, filepath.Join("testdata", "classify", tt.golden+".golden"), []byte(stdout))
		})
	}
}

func TestClassifyUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"missing scheme", []string{"classify"}, "tidemark classify: --scheme is required (juju or semver)\n"},
		{"unknown scheme", []string{"classify", "--scheme", "calver"}, `unknown scheme "calver"`},
		{"juju with build", []string{"sort", "--scheme", "juju", "--build", `k3s(\d+)`}, "only the semver scheme takes one"},
		{"bad build regexp", []string{"classify", "--scheme", "semver", "--build", `k3s(\d+`}, "build pattern `k3s(\\d+`"},
		{"build without group", []string{"sort", "--scheme", "semver", "--build", `k3s\d+`}, "needs a capture group"},
		{"unknown flag", []string{"sort", "--scheme", "semver", "--bogus"}, "tidemark sort: unknown flag: --bogus\n"},
		{"stray argument", []string{"classify", "--scheme", "semver", "x"}, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, "1.2.3\n", tt.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stdout %q stderr %q, want one stderr line containing %q", stdout, stderr, tt.wantStderr)
			}
		})
	}
}

func TestClassifyLargeInput(t *testing.T) {
	var in strings.Builder
	for i := range 20000 {
		in.WriteString("v1.")
		in.WriteString(strings.Repeat("1", 1+i%3))
		in.WriteString(".0-k3s1\n")
	}
	code, stdout, stderr := runMain(t, in.String(), "sort", "--scheme", "semver", "--build", `k3s(\d+)`, "--canonical")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if code != 0 || stderr != "" || len(lines) != 20000 || lines[0] != "v1.1.0+k3s1" || lines[19999] != "v1.111.0+k3s1" {
		t.Errorf("exit %d stderr %q, %d lines from %q to %q", code, stderr, len(lines), lines[0], lines[len(lines)-1])
	}
}
