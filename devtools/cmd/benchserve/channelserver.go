package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// startChannelserver runs rancher/channelserver (the server Tidemark
// replaces) on loopback, fed the same versions: channelserver resolves a
// latestRegexp against GitHub releases, which a loopback bench cannot
// reach, so each channel is written with the latest version Tidemark's
// snapshot answers, under the same redirect base. It is untested here
// without a binary; build one with
//
//	git clone https://github.com/rancher/channelserver && cd channelserver && go build -o channelserver .
//
// and run CHANNELSERVER=./channelserver make bench-serve.
func startChannelserver(bin string, snap *resolver.Snapshot) (string, func(), error) {
	var b strings.Builder
	b.WriteString("k3s:\n  channels:\n")
	for _, a := range snap.Channels() {
		if a.Tag == nil || a.Channel.Stepwise {
			continue
		}
		fmt.Fprintf(&b, "  - name: %q\n    latest: %q\n", a.Channel.Name, a.Tag.Version.String())
	}
	fmt.Fprintf(&b, "  redirectBase: %q\n", strings.TrimSuffix(location, "v1.33.6+k3s2"))
	f, err := os.CreateTemp("", "benchserve-channels-*.yaml")
	if err != nil {
		return "", nil, err
	}
	path := f.Name()
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return "", nil, err
	}
	f.Close()
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--url", path, "--config-key", "k3s", "--path-prefix", "v1-release",
		"--listen-address", addr, "--refresh-interval", "24h")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		os.Remove(path)
		return "", nil, fmt.Errorf("starting channelserver %s: %w", bin, err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); os.Remove(path) }
	u := "http://" + addr
	for deadline := time.Now().Add(15 * time.Second); ; {
		if check(u+"/v1-release/channels/v1.33") == nil {
			return u, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("channelserver %s: /v1-release/channels/v1.33 not answering %s on %s after 15s", bin, location, addr)
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
