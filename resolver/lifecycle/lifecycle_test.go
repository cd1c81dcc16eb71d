package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func day(s string) time.Time {
	t, err := ParseDate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// k8s are four Kubernetes lines, each released on its real date.
var k8s = []Released{
	{1, 33, day("2025-04-23")}, {1, 31, day("2024-08-13")}, {1, 32, day("2024-12-11")}, {1, 34, day("2025-08-27")},
}

func classes(t *Table) map[string]Classification {
	out := map[string]Classification{}
	for _, l := range t.Lines {
		out[l.Line] = l.Class
	}
	return out
}

func TestTheClockMovesALineThroughItsClassifications(t *testing.T) {
	p := Policy{Minors: 3, Grace: 60 * 24 * time.Hour, DeprecateBefore: 30 * 24 * time.Hour}
	// 1.31 ends 60d after 1.34's release (2025-08-27): 2025-10-26; it is
	// deprecated 30 days before, from 2025-09-26.
	for _, tc := range []struct {
		name string
		now  time.Time
		want Classification
	}{
		{"supported the day before deprecation", day("2025-09-25"), Supported},
		{"deprecated from its deprecation date", day("2025-09-26"), Deprecated},
		{"deprecated the instant before its end", day("2025-10-26").Add(-time.Nanosecond), Deprecated},
		{"expired at its end", day("2025-10-26"), Expired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := Build(p, k8s, tc.now)
			if got := classes(tab)["1.31"]; got != tc.want {
				t.Errorf("1.31 at %s: %s, want %s", tc.now, got, tc.want)
			}
			if got := classes(tab)["1.32"]; got != Supported {
				t.Errorf("1.32 (no line 3 newer yet): %s", got)
			}
		})
	}
}

func TestNextIsTheFirstDateAfterNow(t *testing.T) {
	p := Policy{Minors: 3, Grace: 60 * 24 * time.Hour, DeprecateBefore: 30 * 24 * time.Hour}
	tab := Build(p, k8s, day("2025-09-01"))
	if want := day("2025-09-26"); !tab.Next.Equal(want) {
		t.Errorf("Next %s, want %s", tab.Next, want)
	}
	tab = Build(p, k8s, day("2025-09-26"))
	if want := day("2025-10-26"); !tab.Next.Equal(want) {
		t.Errorf("Next %s, want %s", tab.Next, want)
	}
	if tab = Build(p, k8s, day("2026-01-01")); !tab.Next.IsZero() {
		t.Errorf("Next %s after every date, want none", tab.Next)
	}
}

func TestExplicitEndWinsOverTheFileAndTheFileOverTheRule(t *testing.T) {
	p := Policy{Minors: 1, Grace: 24 * time.Hour,
		End:    map[string]time.Time{"1.31": day("2030-01-01")},
		Cycles: map[string]Cycle{"1.31": {EOL: day("2029-01-01")}, "1.32": {EOL: day("2028-01-01"), Support: day("2027-01-01"), Release: day("2024-12-01")}}}
	tab := Build(p, k8s, day("2025-01-01"))
	got := map[string][3]time.Time{}
	for _, l := range tab.Lines {
		got[l.Line] = [3]time.Time{l.Release, l.DeprecatedFrom, l.End}
	}
	want := map[string][3]time.Time{
		"1.31": {day("2024-08-13"), {}, day("2030-01-01")},
		"1.32": {day("2024-12-01"), day("2027-01-01"), day("2028-01-01")},
		"1.33": {day("2025-04-23"), {}, day("2025-08-28")},
		"1.34": {day("2025-08-27"), {}, {}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lines (-want +got):\n%s", d)
	}
}

func TestLinesAreNewestFirstWithTheirSuccessor(t *testing.T) {
	lines := append([]Released{{1, 35, time.Time{}}}, k8s...) // 1.35 only has an rc
	tab := Build(Policy{}, lines, day("2025-09-01"))
	var got []string
	for _, l := range tab.Lines {
		got = append(got, l.Line+">"+l.Successor)
	}
	if want := []string{"1.35>", "1.34>", "1.33>1.34", "1.32>1.33", "1.31>1.32"}; !cmp.Equal(got, want) {
		t.Errorf("lines %v, want %v", got, want)
	}
}

func TestChangedAnnouncesOnlyCrossings(t *testing.T) {
	p := Policy{Minors: 3, Grace: 60 * 24 * time.Hour}
	before := Build(p, k8s[:3], day("2025-01-01"))
	after := Build(p, k8s, day("2025-12-01")) // 1.31 supported -> expired; 1.34 new
	ch := after.Changed(before)
	if len(ch) != 1 || ch[0].Line != "1.31" || ch[0].Class != Expired {
		t.Errorf("changed %+v, want only 1.31 expired", ch)
	}
	if again := after.Changed(after); len(again) != 0 {
		t.Errorf("no crossing between equal tables: %+v", again)
	}
}

func TestWarningNamesTheEndAndTheSuccessor(t *testing.T) {
	tab := Build(Policy{End: map[string]time.Time{"1.31": day("2025-10-28")}}, k8s, day("2025-11-01"))
	l, _ := tab.Of(1, 31)
	if got, want := l.Warning("v1.31.4+k3s1"), "v1.31.4+k3s1 is expired: its line 1.31 ends 2025-10-28; move to 1.32"; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
	l, _ = tab.Of(1, 34)
	if got := l.Warning("v1.34.0"); got != "" {
		t.Errorf("a supported line warns %q", got)
	}
	dep := Build(Policy{Cycles: map[string]Cycle{"1.34": {Support: day("2025-09-01")}}}, k8s, day("2025-11-01"))
	l, _ = dep.Of(1, 34)
	if got, want := l.Warning("v1.34.1"), "v1.34.1 is deprecated: its line 1.34 has no end date yet"; got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
}

func TestParseFileReadsEndoflifeDate(t *testing.T) {
	cycles, err := ParseFile([]byte(`[
	  {"cycle":"1.31","releaseDate":"2024-08-13","eol":"2025-10-28","support":"2025-08-28","latest":"1.31.4","lts":false},
	  {"cycle":"1.34","releaseDate":"2025-08-27","eol":false,"support":true}]`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Cycle{
		"1.31": {Release: day("2024-08-13"), EOL: day("2025-10-28"), Support: day("2025-08-28")},
		"1.34": {Release: day("2025-08-27")},
	}
	if d := cmp.Diff(want, cycles); d != "" {
		t.Errorf("cycles (-want +got):\n%s", d)
	}
}

func TestParseFileNamesTheBadEntry(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a bad date", `[{"cycle":"1.31","eol":"2025-13-40"}]`, `cycle 1.31: eol: "2025-13-40" is not a date`},
		{"an unknown key", `[{"cycle":"1.31","eoll":"2025-10-28"}]`, `cycle 1.31: unknown key "eoll" (did you mean "eol"?)`},
		{"a cycle that is no line", `[{"cycle":"bookworm"}]`, `cycle bookworm: "bookworm" is not a line`},
		{"not an array", `{"cycle":"1.31"}`, `want a JSON array`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFile([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
