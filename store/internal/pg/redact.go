package pg

import (
	"fmt"
	neturl "net/url"
	"regexp"
)

// RedactURL is a database URL (or keyword/value string) as it may be
// shown: any password replaced by xxxxx.
func RedactURL(s string) string {
	if s == "" {
		return "(not set)"
	}
	u, err := neturl.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" && u.Opaque != "" {
		// keyword/value ("host=h password=p"), or a URL too broken to
		// parse: mask what may be a password either way.
		s = urlPassword.ReplaceAllString(s, "${1}xxxxx@")
		return dsnPassword.ReplaceAllString(fmt.Sprintf("%q", s), "${1}xxxxx")
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return fmt.Sprintf("%q", u.Redacted())
}

var urlPassword = regexp.MustCompile(`(://[^:/@]*:)[^@]*@`)

var dsnPassword = regexp.MustCompile(`(password\s*=\s*)('[^']*'|[^\s"]*)`)
