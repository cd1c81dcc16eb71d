package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/config"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// TestRKE2ChannelsYAMLThroughTheRealLoader feeds rancher/rke2's
// channels.yaml, unchanged but for a source and defaults, through the
// configuration loader and the resolver, as serve does, and checks what
// channelserver clients would be told. (server/ tests load the
// fixtures the same way; this test is the path serve takes.)
func TestRKE2ChannelsYAMLThroughTheRealLoader(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("..", "..", "internal", "config", "testdata", "rke2-channels.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	head := "defaults: {source: rke2, stream: testing}\n" +
		"sources:\n  - {name: rke2, image: docker.io/rancher/rke2-upgrade, scheme: semver, build: 'rke2r(\\d+)'}\n"
	cfg, err := config.Parse("rke2.yaml", append([]byte(head), fixture...), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	src := cfg.Sources[0].Source.Source
	var tags []string
	for minor := 18; minor <= 36; minor++ {
		for p := 0; p <= 9; p++ {
			tags = append(tags, fmt.Sprintf("v1.%d.%d-rke2r1", minor, p))
		}
	}
	tags = append(tags, "v1.35.7-rke2r2", "v1.37.0-rc1-rke2r1", "latest")
	data := catalog.SourceData{Source: src}
	for _, tag := range tags {
		ct := src.Classify(tag)
		ct.Present = true
		data.Tags = append(data.Tags, ct)
	}
	snap := snapshot.New(cfg.Channels, []catalog.SourceData{data}, nil, time.Now())

	want := map[string]string{
		"stable":  "v1.35.7+rke2r1", // pinned by latest:, although r2 exists
		"latest":  "v1.36.9+rke2r1", // the newer v1.37.0 rc is excluded by ^[^+]+-
		"testing": "v1.37.0-rc1+rke2r1",
		"v1.19":   "v1.19.9+rke2r1",
		"v1.25":   "v1.25.9+rke2r1",
		"v1.35":   "v1.35.9+rke2r1",
	}
	for name, version := range want {
		a, err := snap.Channel(name)
		if err != nil {
			t.Fatalf("channel %s: %v", name, err)
		}
		if a.Tag == nil || a.Tag.Version.String() != version {
			t.Errorf("channel %s serves %v, want %s", name, a.Tag, version)
		}
		if a.Channel.Redirect != "https://github.com/rancher/rke2/releases/tag/" {
			t.Errorf("channel %s redirect %q, want redirectBase", name, a.Channel.Redirect)
		}
	}
	// The excludes name one build each: v1.25.5+rke2r1 is never served by latest.
	if a, _ := snap.Channel("v1.25"); a.Tag != nil && a.Tag.Version.String() == "v1.25.5+rke2r1" {
		t.Error("v1.25 serves the excluded v1.25.5+rke2r1")
	}
	if len(cfg.Warnings) != 1 {
		t.Errorf("warnings %q, want one for the ignored github key", cfg.Warnings)
	}
}
