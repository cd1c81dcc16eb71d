// Package logtext shortens what a client sent before a log line or an
// error message quotes it (a header, a path or a claim can be megabytes),
// and masks the secrets a client may send in a URL.
package logtext

import (
	"net/url"
	"slices"
	"strings"
)

// Cut is s shortened to n bytes, with "…" when it was longer; a rune cut
// in half is dropped, so the result is valid UTF-8.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// secretParams are query parameters whose values are credentials in some
// client or other (OAuth's access_token, registries' token, signed URLs'
// sig and signature, ...), compared without case.
var secretParams = []string{"token", "bearer", "access_token", "password", "secret", "key", "sig", "signature"}

// TokenPrefix begins every Tidemark token's secret.
const TokenPrefix = "tdm_"

// RedactQuery is raw with the value of every secret parameter, and every
// value that is a Tidemark token, replaced by *** (whatever its
// escaping); the rest is left as the client sent it.
func RedactQuery(raw string) string {
	pairs := strings.Split(raw, "&")
	changed := false
	for i, pair := range pairs {
		k, v, hasValue := strings.Cut(pair, "=")
		if !hasValue || v == "" {
			continue
		}
		key, err := url.QueryUnescape(k)
		if err != nil {
			key = k
		}
		if slices.ContainsFunc(secretParams, func(s string) bool { return strings.EqualFold(s, key) }) || LooksLikeToken(v) {
			pairs[i] = k + "=***"
			changed = true
		}
	}
	if !changed {
		return raw
	}
	return strings.Join(pairs, "&")
}

// LooksLikeToken reports whether an escaped value, unescaped, begins with
// tdm_ (tdm%5F too).
func LooksLikeToken(v string) bool {
	if strings.HasPrefix(strings.ToLower(v), TokenPrefix) {
		return true
	}
	if !strings.Contains(v, "%") {
		return false
	}
	u, err := url.QueryUnescape(v)
	return err == nil && strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), TokenPrefix)
}
