// Package devtools holds the programs that are not the product (cmd/) and
// this test, which keeps the code's structure within its limits.
package devtools

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Limits of the layout (docs/development.md): a file asking to be split,
// a package asking to be two.
const (
	maxFileLines    = 450
	maxPackageLines = 2500
)

// TestStructureStaysWithinItsLimits fails when a Go file (tests aside)
// passes 450 lines or a package's non-test files pass 2,500, naming each,
// so the limits hold without anyone counting.
func TestStructureStaysWithinItsLimits(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	perDir := map[string]int{}
	var big []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin" || name == "tmp" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n := bytes.Count(b, []byte("\n"))
		rel, _ := filepath.Rel(root, path)
		if n > maxFileLines {
			big = append(big, rel)
			t.Errorf("%s has %d lines, over %d: split it", rel, n, maxFileLines)
		}
		perDir[filepath.Dir(rel)] += n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	dirs := make([]string, 0, len(perDir))
	for d := range perDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if n := perDir[d]; n > maxPackageLines {
			t.Errorf("package %s has %d non-test lines, over %d: move a part into a package of its own", d, n, maxPackageLines)
		}
	}
	if len(perDir) < 20 {
		t.Fatalf("counted only %d packages under %s: the walk is wrong", len(perDir), root)
	}
}
