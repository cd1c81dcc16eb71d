package scripts

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestTheReadmeNamesWhatMakeTestInstalls: every Debian package and npm
// package scripts/test-deps may install is named in the README's paragraph
// on make test, so a user knows what it will put on the machine.
func TestTheReadmeNamesWhatMakeTestInstalls(t *testing.T) {
	deps, err := os.ReadFile("test-deps")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	para := string(readme)
	if i := strings.Index(para, "`make test` first installs"); i >= 0 {
		para = para[i:]
		if j := strings.Index(para, "\n\n"); j >= 0 {
			para = para[:j]
		}
	}
	var names []string
	for _, m := range regexp.MustCompile(`need\+=\(([a-z-]+)\)`).FindAllStringSubmatch(string(deps), -1) {
		names = append(names, m[1])
	}
	for _, m := range regexp.MustCompile(`npm install .*"([a-z-]+)@`).FindAllStringSubmatch(string(deps), -1) {
		names = append(names, m[1])
	}
	if len(names) < 8 {
		t.Fatalf("found only %v in test-deps", names)
	}
	for _, n := range names {
		if !strings.Contains(para, "`"+n+"`") && !strings.Contains(para, "`"+n+"@") {
			t.Errorf("README's make test paragraph does not name %s", n)
		}
	}
}
