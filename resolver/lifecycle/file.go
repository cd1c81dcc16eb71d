package lifecycle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// fileKeys are the keys an endoflife.date cycle may carry; others are
// reported as unknown (with a did-you-mean) so that a typo never passes
// for "no end".
var fileKeys = []string{"cycle", "releaseDate", "eol", "support", "latest", "latestReleaseDate", "lts",
	"codename", "link", "discontinued", "extendedSupport", "minJavaVersion"}

// ParseFile reads an endoflife.date product file: a JSON array of cycles
// whose eol and support are a date (YYYY-MM-DD) or a boolean. A cycle's
// problem names it ("cycle 1.31: eol: ...").
func ParseFile(data []byte) (map[string]Cycle, error) {
	var raw []map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("want a JSON array of cycles as endoflife.date publishes: %w", err)
	}
	out := make(map[string]Cycle, len(raw))
	for i, e := range raw {
		var name string
		if err := json.Unmarshal(e["cycle"], &name); err != nil || name == "" {
			return nil, fmt.Errorf("entry #%d: cycle: missing or not a string", i+1)
		}
		item := "cycle " + name
		if _, _, err := ParseLine(name); err != nil {
			return nil, fmt.Errorf("%s: %w", item, err)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: duplicate cycle", item)
		}
		for k := range e {
			if !contains(fileKeys, k) {
				return nil, fmt.Errorf("%s: unknown key %q%s", item, k, DidYouMean(k, fileKeys))
			}
		}
		var c Cycle
		var err error
		if c.Release, err = fileDate(e["releaseDate"], false); err != nil {
			return nil, fmt.Errorf("%s: releaseDate: %w", item, err)
		}
		if c.EOL, err = fileDate(e["eol"], true); err != nil {
			return nil, fmt.Errorf("%s: eol: %w", item, err)
		}
		if c.Support, err = fileDate(e["support"], true); err != nil {
			return nil, fmt.Errorf("%s: support: %w", item, err)
		}
		out[name] = c
	}
	return out, nil
}

// fileDate reads a date, or (when boolOK) a boolean, which gives no date:
// endoflife.date writes `"eol": false` for a cycle with no end yet, and
// `true` for one ended on a date it does not know (no date to act on).
func fileDate(raw json.RawMessage, boolOK bool) (time.Time, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, nil
	}
	if boolOK && (string(raw) == "true" || string(raw) == "false") {
		return time.Time{}, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return time.Time{}, fmt.Errorf("want a date like 2025-10-28%s, got %s", map[bool]string{true: " or a boolean"}[boolOK], raw)
	}
	return ParseDate(s)
}

// ParseDate reads YYYY-MM-DD as 00:00 UTC of that day.
func ParseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date (want YYYY-MM-DD)", s)
	}
	return t.UTC(), nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// DidYouMean is ` (did you mean "x"?)` for the known word closest to s,
// or "" when none is close.
func DidYouMean(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := distance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
