package server

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// loadChannelserver loads the channelserver file from its one copy in
// internal/config/testdata through the configuration loader, as an operator
// imports it: `defaults: {source: <source>, stream: testing}` and a source in
// front, the rest unchanged.
func loadChannelserver(file, source, build string) ([]catalog.Channel, error) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "config", "testdata", file))
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("defaults: {source: %[1]s, stream: testing}\nsources:\n"+
		"  - {name: %[1]s, image: docker.io/rancher/%[1]s-upgrade, scheme: semver, build: '%[2]s'}\n", source, build)
	cfg, err := config.Parse(file, append([]byte(head), data...), nil)
	if err != nil {
		return nil, err
	}
	return cfg.Channels, nil
}

// rke2Tags is an rke2-like tag list where each of the fixture's excludes
// hits the newest release of its minor, and some releases have a second build.
func rke2Tags() []string {
	last := map[int]int{18: 4, 19: 13, 20: 9, 21: 3, 24: 9, 25: 5, 26: 2, 35: 8}
	var tags []string
	for minor := 18; minor <= 35; minor++ {
		n, ok := last[minor]
		if !ok {
			n = 5
		}
		for p := 0; p <= n; p++ {
			tags = append(tags, fmt.Sprintf("v1.%d.%d-rke2r1", minor, p))
		}
		if minor >= 22 && minor%2 == 0 && minor != 24 && minor != 26 {
			tags = append(tags, fmt.Sprintf("v1.%d.5-rke2r2", minor))
		}
	}
	return append(tags, "v1.20.9-rke2r2", "v1.21.3-rke2r2", "v1.35.9-rc2-rke2r1", "v1.36.0-rc1-rke2r1", "latest")
}

func TestChannelserverFixturesAnswerEveryChannel(t *testing.T) {
	k3sWant := map[string]string{
		"stable": "v1.21.2+k3s1", "latest": "v1.34.2+k3s2", "testing": "v1.35.0-rc2+k3s1",
		"v1.16": "v1.16.15+k3s1", "v1.16-testing": "", "v1.17": "v1.17.17+k3s1", "v1.17-testing": "",
		"v1.18": "v1.18.20+k3s1", "v1.18-testing": "", "v1.19": "v1.19.16+k3s2", "v1.20": "v1.20.15+k3s1",
		"v1.21": "v1.21.2+k3s1",
	}
	rke2Want := map[string]string{
		"stable": "v1.35.7+rke2r1", "latest": "v1.35.8+rke2r1", "testing": "v1.36.0-rc1+rke2r1",
		"v1.18": "v1.18.4+rke2r1",
		"v1.19": "v1.19.12+rke2r1", // v1.19.13+rke2r1 excluded
		"v1.20": "v1.20.9+rke2r2",  // only r1 of v1.20.9 is excluded
		"v1.21": "v1.21.3+rke2r1",  // r2 excluded, r1 still served
		"v1.22": "v1.22.5+rke2r2", "v1.23": "v1.23.5+rke2r1",
		"v1.24": "v1.24.8+rke2r1", "v1.25": "v1.25.4+rke2r1", "v1.26": "v1.26.2+rke2r1",
		"v1.27": "v1.27.5+rke2r1", "v1.28": "v1.28.5+rke2r2", "v1.29": "v1.29.5+rke2r1",
		"v1.30": "v1.30.5+rke2r2", "v1.31": "v1.31.5+rke2r1", "v1.32": "v1.32.5+rke2r2",
		"v1.33": "v1.33.5+rke2r1", "v1.34": "v1.34.5+rke2r2", "v1.35": "v1.35.8+rke2r1",
		"v1.36": "", // only a release candidate, which the exclude drops
	}
	tests := []struct {
		file, source, build, redirect string
		tags                          []string
		want                          map[string]string
	}{
		{"k3s-channel.yaml", "k3s", `k3s(\d+)`, "https://github.com/k3s-io/k3s/releases/tag/", k3sTags(), k3sWant},
		{"rke2-channels.yaml", "rke2", `rke2r(\d+)`, "https://github.com/rancher/rke2/releases/tag/", rke2Tags(), rke2Want},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, err := resolver.NewParser(resolver.SchemeSemver, tt.build)
			if err != nil {
				t.Fatal(err)
			}
			src := catalog.Source{Name: tt.source, Image: "docker.io/rancher/" + tt.source, Parser: p}
			channels, err := loadChannelserver(tt.file, tt.source, tt.build)
			if err != nil {
				t.Fatal(err)
			}
			snap := snapshot.New(channels, []catalog.SourceData{sourceData(src, tt.tags, nil)}, nil, loadedAt)
			_, ts, _ := newTestServer(t, snap, "")
			for _, ch := range channels {
				want, ok := tt.want[ch.Name]
				if !ok {
					t.Errorf("channel %q of %s has no expected answer in this test", ch.Name, tt.file)
					continue
				}
				res, body := get(t, ts, "/v1-release/channels/"+ch.Name)
				switch {
				case want == "" && res.StatusCode != http.StatusNotFound:
					t.Errorf("%s: %d Location %q, want 404", ch.Name, res.StatusCode, res.Header.Get("Location"))
				case want != "" && (res.StatusCode != http.StatusFound || res.Header.Get("Location") != tt.redirect+want):
					t.Errorf("%s: %d Location %q, want 302 %q; body %s", ch.Name, res.StatusCode, res.Header.Get("Location"), tt.redirect+want, body)
				}
			}
			if len(channels) != len(tt.want) {
				t.Errorf("%s has %d channels, the test expects %d", tt.file, len(channels), len(tt.want))
			}
		})
	}
}
