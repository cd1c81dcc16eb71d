package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// startChannelserver runs rancher/channelserver (the server Tidemark
// replaces) on loopback, fed the same versions: channelserver resolves a
// latestRegexp against GitHub releases, which a loopback bench cannot
// reach, so each channel is written with the latest version Tidemark's
// snapshot answers, under the same redirect base. The bench takes the
// program as a path, CHANNELSERVER=/path/to/channelserver make
// bench-serve, and leaves that target out when it is unset; it never
// fetches or builds one. startChannelserver also returns its process ID,
// for its CPU time.
func startChannelserver(bin string, snap *snapshot.Snapshot) (string, int, func(), error) {
	var b strings.Builder
	b.WriteString("k3s:\n  channels:\n")
	for _, a := range snap.Channels() {
		if a.Tag == nil || a.Channel.Stepwise {
			continue
		}
		fmt.Fprintf(&b, "  - name: %q\n    latest: %q\n", a.Channel.Name, a.Tag.Version.String())
	}
	fmt.Fprintf(&b, "  redirectBase: %q\n", strings.TrimSuffix(location, "v1.33.6+k3s2"))
	// channelserver reads ./channels.yaml whatever --url says (its --url
	// flag has no destination as of 0d8ed6d), so it runs in a directory of
	// its own holding that file.
	dir, err := os.MkdirTemp("", "benchserve-channelserver-")
	if err != nil {
		return "", 0, nil, err
	}
	path := filepath.Join(dir, "channels.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", 0, nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", 0, nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--url", path, "--config-key", "k3s", "--path-prefix", "v1-release",
		"--listen-address", addr, "--refresh-interval", "24h")
	// Its access log (a line a request, its default) is written to
	// /dev/null rather than interleaved with the bench's table.
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", 0, nil, fmt.Errorf("starting channelserver %s: %w", bin, err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); os.RemoveAll(dir) }
	u := "http://" + addr
	for deadline := time.Now().Add(15 * time.Second); ; {
		if check(u+"/v1-release/channels/v1.33") == nil {
			return u, cmd.Process.Pid, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", 0, nil, fmt.Errorf("channelserver %s: /v1-release/channels/v1.33 not answering %s on %s after 15s", bin, location, addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
