// Package logtext shortens what a client sent before a log line or an
// error message quotes it: a header, a path or a claim can be megabytes.
package logtext

import "strings"

// Cut is s shortened to n bytes, with "…" when it was longer; a rune cut
// in half is dropped, so the result is valid UTF-8.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
