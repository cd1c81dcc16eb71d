package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// hints are the lines a person needs next once a local server listens
// (serve --hints, which make run and make demo set): where it is, a token
// command that works as pasted against the same database, and the way out
// when the registries cannot be reached.
type hints struct {
	w    io.Writer
	demo bool // make demo: the offline tip is moot, the curl tour is not
	// example: serving deploy/examples/tidemark.yaml, whose channels make
	// demo serves offline too.
	example bool
	now     func() time.Time
}

// print is called once serve listens on addr.
func (h hints) print(addr net.Addr, databaseURL string) {
	base := baseURL(addr)
	bin := selfCommand()
	// A token name must be unique and make run keeps its database across
	// runs: a timestamped name pastes cleanly every time.
	name := fmt.Sprintf("dev-%d", h.now().Unix())
	var b strings.Builder
	fmt.Fprintf(&b, "\ntidemark: serving at %s\n", base)
	if h.demo {
		fmt.Fprintf(&b, `  try:
    curl -si %[1]s/v1-release/channels/stable | grep Location
    curl -s  %[1]s/v1-release/channels
    curl -s  %[1]s/api/v1/channels/released
    curl -s '%[1]s/api/v1/resolve?source=jujud-operator&current=2.9.33&stream=released'
    %[2]s resolve --server %[1]s --source k3s-upgrade --current v1.31.4+k3s1
`, base, bin)
	}
	fmt.Fprintf(&b, "  a token for writes (pin, block, scan), in another terminal:\n")
	fmt.Fprintf(&b, "    export TIDEMARK_SERVER=%s\n", base)
	fmt.Fprintf(&b, "    export TIDEMARK_TOKEN=$(DATABASE_URL=%s %s token create --name %s --scope promote)\n", shellQuote(databaseURL), bin, name)
	fmt.Fprintf(&b, "    %s channels\n", bin)
	switch {
	case h.example:
		fmt.Fprintf(&b, "  registries unreachable (offline, rate-limited)? make demo serves the same channels from an in-process registry\n")
	case !h.demo:
		fmt.Fprintf(&b, "  registries unreachable (offline, rate-limited)? %s sources --server %s shows each source's last scan and its error\n", bin, base)
	}
	_, _ = io.WriteString(h.w, b.String())
}

// baseURL is the URL a local client uses for a listen address: an
// unspecified host (":8080", "[::]:8080") is reached as localhost.
func baseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// selfCommand is how to run this binary again from the current directory:
// bin/tidemark under make, else its absolute path.
func selfCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "tidemark"
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, exe); err == nil && !strings.HasPrefix(rel, "..") {
			if !strings.ContainsRune(rel, filepath.Separator) {
				rel = "." + string(filepath.Separator) + rel
			}
			return rel
		}
	}
	return exe
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isExampleConfig reports whether file is deploy/examples/tidemark.yaml
// (make run's), whose channels make demo serves.
func isExampleConfig(file string) bool {
	return filepath.ToSlash(filepath.Clean(file)) == "deploy/examples/tidemark.yaml" ||
		strings.HasSuffix(filepath.ToSlash(file), "/deploy/examples/tidemark.yaml")
}
