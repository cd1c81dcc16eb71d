package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

func TestLifecycleProblemsNameTheEntry(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`[{"cycle":"1.31","eol":"2025-02-30"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, lifecycle, want string }{
		{"an unparseable end date", `{end: {"1.31": 2026-13-01}}`, `source "k3s": lifecycle.end.1.31: "2026-13-01" is not a date (want YYYY-MM-DD)`},
		{"a line that is no line", `{end: {"v1": 2026-10-01}}`, `source "k3s": lifecycle.end: "v1" is not a line`},
		{"an unknown key gets a did you mean", `{suport: {minors: 3}}`, `source "k3s": lifecycle: unknown key "suport" (did you mean "support"?)`},
		{"an unknown support key", `{support: {minors: 3, grase: 90d}}`, `lifecycle.support: unknown key "grase" (did you mean "grace"?)`},
		{"a missing file", `{file: nope.json}`, `source "k3s": lifecycle.file: open ` + filepath.Join(dir, "nope.json")},
		{"a bad date in the file names its cycle", `{file: bad.json}`, `lifecycle.file: bad.json: cycle 1.31: eol: "2025-02-30" is not a date`},
		{"support without minors", `{support: {grace: 90d}}`, `lifecycle.support.minors: missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yaml := base + "    lifecycle: " + tc.lifecycle + "\n"
			_, err := Parse(filepath.Join(dir, "t.yaml"), []byte(yaml), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLifecycleIsReadAndNeedsNoRestart(t *testing.T) {
	dir := t.TempDir()
	file := `[{"cycle":"1.31","releaseDate":"2024-08-13","eol":"2025-10-28","support":"2025-08-28"}]`
	if err := os.WriteFile(filepath.Join(dir, "k8s.json"), []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(lc string) *Config {
		t.Helper()
		cfg, err := Parse(filepath.Join(dir, "t.yaml"), []byte(base+"    lifecycle: "+lc+"\n"+
			"channels:\n  - {name: s, source: k3s, lifecycle: {upgrade_expired: true}}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	a := read(`{support: {minors: 3, grace: 90d}, deprecate_before: 60d, end: {"1.30": 2025-06-28}, file: k8s.json}`)
	p := a.Lifecycles()["k3s"]
	if p.Minors != 3 || p.Grace != 90*24*time.Hour || p.DeprecateBefore != 60*24*time.Hour {
		t.Errorf("policy %+v", p)
	}
	if want, _ := lifecycle.ParseDate("2025-06-28"); !p.End["1.30"].Equal(want) {
		t.Errorf("end 1.30 = %s", p.End["1.30"])
	}
	if want, _ := lifecycle.ParseDate("2025-10-28"); !p.Cycles["1.31"].EOL.Equal(want) {
		t.Errorf("file cycle 1.31 = %+v", p.Cycles["1.31"])
	}
	if !a.Channels[0].UpgradeExpired {
		t.Error("upgrade_expired not read")
	}
	b := read(`{support: {minors: 2, grace: 30d}}`)
	if !a.SameSources(b) {
		t.Error("a lifecycle change counts as a source change (it needs no restart)")
	}
}

// TestLifecycleDocsExampleLoads: docs/lifecycle.md's configuration, with
// its endoflife.date file beside it, loads and means what the page says;
// the problems the page quotes are the ones config check prints.
func TestLifecycleDocsExampleLoads(t *testing.T) {
	b, err := os.ReadFile("../../docs/lifecycle.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	block := func(lang string) string {
		_, after, _ := strings.Cut(doc, "```"+lang+"\n")
		out, _, _ := strings.Cut(after, "```")
		return out
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubernetes.json"), []byte(block("json")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(filepath.Join(dir, "tidemark.yaml"), []byte(block("yaml")), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Lifecycles()["k3s"]
	day := func(s string) time.Time { d, _ := lifecycle.ParseDate(s); return d }
	if p.Minors != 3 || p.Grace != 90*24*time.Hour || p.DeprecateBefore != 60*24*time.Hour || !p.End["1.30"].Equal(day("2025-06-28")) ||
		len(p.Cycles) != 3 || !p.Cycles["1.32"].EOL.Equal(day("2026-02-28")) || !p.Cycles["1.34"].EOL.IsZero() {
		t.Errorf("policy %+v", p)
	}
	if len(cfg.Channels) != 1 || !cfg.Channels[0].UpgradeExpired {
		t.Errorf("channels %+v", cfg.Channels)
	}
	even := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, bad := range []struct{ lifecycle, file string }{
		{`{suport: {minors: 3}}`, ""},
		{`{file: kubernetes.json}`, `[{"cycle":"1.31","eol":"2025-02-30"}]`},
	} {
		if bad.file != "" {
			if err := os.WriteFile(filepath.Join(dir, "kubernetes.json"), []byte(bad.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Parse(filepath.Join(dir, "t.yaml"), []byte(base+"    lifecycle: "+bad.lifecycle+"\n"), nil)
		if err == nil {
			t.Fatalf("%s loads", bad.lifecycle)
		}
		_, msg, _ := strings.Cut(err.Error(), `source "k3s": `)
		if !strings.Contains(even(doc), "`"+msg+"`") {
			t.Errorf("docs/lifecycle.md does not quote the problem as printed: %s", msg)
		}
	}
}
