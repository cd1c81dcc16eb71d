package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRepeatsFindsRunsOfLogicNotImportsOrWords: two functions alike but
// for their strings and numbers are one pair; import blocks, comments,
// help text and a shorter run are not.
func TestRepeatsFindsRunsOfLogicNotImportsOrWords(t *testing.T) {
	dir := t.TempDir()
	body := func(s string, n int) string {
		return fmt.Sprintf(`	x := compute(%q)
	if x > %d {
		log.Print(x)
	}
	y := other(x)
	z := y + x
	save(z)
`, s, n)
	}
	header := "package p\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n\t\"time\"\n\t\"log\"\n\t\"net\"\n)\n\n// A comment\n// that is long\n"
	help := "var help = \"one \" +\n\t\"two \" +\n\t\"three \" +\n\t\"four \" +\n\t\"five \" +\n\t\"six\"\n"
	files := map[string]string{
		"a.go": header + help + "func a() {\n" + body("a", 1) + "}\n",
		"b.go": header + help + "func b() {\n" + body("b", 2) + "}\n",
		"c.go": header + "func c() {\n" + strings.Join(strings.Split(body("c", 3), "\n")[:4], "\n") + "\n}\n",
	}
	var paths []string
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	pairs := find(paths, 6)
	if len(pairs) != 1 || !strings.Contains(pairs[0], "a.go:") || !strings.Contains(pairs[0], "b.go:") {
		t.Errorf("pairs %q, want one of a.go and b.go", pairs)
	}
}
