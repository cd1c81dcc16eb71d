// Command repeats lists the places where the non-test Go code repeats
// itself: runs of six or more lines that are the same but for string and
// number literals and white space, skipping blank lines, comments, import
// blocks and lone punctuation. make lint runs it with -max, the count the
// tree had when the check came in, so that new repeated logic fails the
// build while the old is folded away over time. A run found in more than
// eight places is a shape of the language (boilerplate), not a repeat.
//
// It is a small cousin of the duplicates tool, in the repository so that
// CI needs nothing installed.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

func main() {
	minLines := flag.Int("min-lines", 6, "how many shared lines make a repeat")
	maxPairs := flag.Int("max", -1, "fail when more pairs of places than this repeat (-1: only list them)")
	list := flag.Bool("list", false, "list every pair")
	flag.Parse()
	files, err := goFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "repeats:", err)
		os.Exit(2)
	}
	pairs := find(files, *minLines)
	if *list || (*maxPairs >= 0 && len(pairs) > *maxPairs) {
		for _, p := range pairs {
			fmt.Println(p)
		}
	}
	fmt.Printf("repeats: %d pairs of places share %d or more lines (non-test Go files: %d)\n", len(pairs), *minLines, len(files))
	if *maxPairs >= 0 && len(pairs) > *maxPairs {
		fmt.Fprintf(os.Stderr, "repeats: %d pairs, more than the %d allowed: fold the new repeat into one function (or, having folded others, lower REPEATS_MAX in the Makefile)\n", len(pairs), *maxPairs)
		os.Exit(1)
	}
}

// goFiles are the tracked non-test Go files.
func goFiles() ([]string, error) {
	out, err := exec.Command("git", "ls-files", "*.go").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasSuffix(f, "_test.go") && !strings.Contains(f, "/testdata/") {
			files = append(files, f)
		}
	}
	return files, nil
}

type line struct {
	n    int // 1-based line number
	text string
}

var (
	// data is a line of literals alone (a help text continued, a table's
	// row): words, not logic.
	data    = regexp.MustCompile(`^(?:[A-Za-z_.]+: )?L(?: *[+,] *L)*[ +,]*$`)
	literal = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`|'(?:[^'\\\\]|\\\\.)*'|\\b\\d[\\d_.xXa-fA-F]*\\b")
	lonely  = regexp.MustCompile(`^[\s\p{P}]*$`)
)

// significant are f's lines that say something, normalized.
func significant(src []byte) []line {
	var out []line
	inImport, inComment := false, false
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		switch {
		case inComment:
			inComment = !strings.Contains(t, "*/")
			continue
		case strings.HasPrefix(t, "/*"):
			inComment = !strings.Contains(t, "*/")
			continue
		case inImport:
			inImport = t != ")"
			continue
		case t == "import (":
			inImport = true
			continue
		case t == "" || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "import ") || strings.HasPrefix(t, "package ") || lonely.MatchString(t):
			continue
		}
		if i := strings.Index(t, " //"); i >= 0 {
			t = strings.TrimSpace(t[:i])
		}
		norm := strings.Join(strings.Fields(literal.ReplaceAllString(t, "L")), " ")
		if data.MatchString(norm) {
			continue
		}
		out = append(out, line{n, norm})
	}
	return out
}

type place struct {
	file     string
	from, to int
}

// find pairs every two places that share a run of minLines significant
// lines, one pair a pair of files (and of places in one file), the
// longest run named.
func find(files []string, minLines int) []string {
	type at struct {
		file string
		i    int
	}
	lines := map[string][]line{}
	windows := map[uint64][]at{}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		ls := significant(src)
		lines[f] = ls
		for i := 0; i+minLines <= len(ls); i++ {
			h := fnv.New64a()
			for _, l := range ls[i : i+minLines] {
				h.Write([]byte(l.text))
				h.Write([]byte{'\n'})
			}
			k := h.Sum64()
			windows[k] = append(windows[k], at{f, i})
		}
	}
	type key struct{ a, b string }
	best := map[key][2]place{}
	for _, ats := range windows {
		if len(ats) < 2 || len(ats) > 8 {
			continue
		}
		for x := 0; x < len(ats); x++ {
			for y := x + 1; y < len(ats); y++ {
				a, b := ats[x], ats[y]
				if a.file == b.file && b.i-a.i < minLines && a.i-b.i < minLines {
					continue // overlapping windows of one run
				}
				if a.file > b.file || (a.file == b.file && a.i > b.i) {
					a, b = b, a
				}
				k := key{a.file, b.file}
				if a.file == b.file {
					k.b += fmt.Sprintf("#%d", b.i-a.i) // one pair per distance in one file
				}
				la, lb := lines[a.file], lines[b.file]
				p := [2]place{{a.file, la[a.i].n, la[a.i+minLines-1].n}, {b.file, lb[b.i].n, lb[b.i+minLines-1].n}}
				if old, ok := best[k]; !ok || p[0].from < old[0].from {
					best[k] = p
				}
			}
		}
	}
	var out []string
	for _, p := range best {
		out = append(out, fmt.Sprintf("%s:%d-%d ~ %s:%d-%d", p[0].file, p[0].from, p[0].to, p[1].file, p[1].from, p[1].to))
	}
	slices.Sort(out)
	return out
}
