package snapshot

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// jujuTags are jujud-operator-shaped tags: releases, betas and rcs, juju
// development builds (.N), the next major's pre-releases and a few tags
// that are not versions.
var jujuTags = []string{
	"2.8.9", "2.9-beta1", "2.9-rc1", "2.9.0", "2.9.10", "2.9.10.1", "2.9.11",
	"2.9.40", "2.9.42", "2.9.42.1", "3.0-beta1", "3.0-beta1.1", "3.0-rc1",
	"3.0.0", "3.0.2", "latest", "2.8", "v2.9.1",
}

// k3sTags are k3s-upgrade-shaped tags, including the same version spelled
// with "-" and "+", a second build revision, an arch-suffixed tag (a
// different, pre-release version) and a minor (1.34) with only candidates.
var k3sTags = []string{
	"v1.31.9+k3s1", "v1.32.4+k3s1", "v1.32.5+k3s1", "v1.32.5-k3s1-amd64",
	"v1.33.0-rc1+k3s1", "v1.33.0+k3s1", "v1.33.5+k3s1", "v1.33.6-k3s1",
	"v1.33.6+k3s1", "v1.33.6+k3s2", "v1.34.0-rc1-k3s1", "v1.34.0-rc2+k3s1",
	"v1.35.1+k3s1", "latest", "v1.33",
}

func mustParser(t testing.TB, scheme resolver.Scheme, build string) *resolver.Parser {
	t.Helper()
	p, err := resolver.NewParser(scheme, build)
	if err != nil {
		t.Fatalf("NewParser(%s, %q): %v", scheme, build, err)
	}
	return p
}

// sourceData classifies tags as the indexer would and blocks versions.
func sourceData(t testing.TB, name string, p *resolver.Parser, tags []string, blocked ...string) catalog.SourceData {
	t.Helper()
	src := catalog.Source{Name: name, Image: "registry.example/" + name, Parser: p}
	d := catalog.SourceData{Source: src}
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, name := range tags {
		tag := src.Classify(name)
		tag.Present, tag.FirstSeen, tag.LastSeen = true, resolver.InstantOf(seen), resolver.InstantOf(seen)
		tag.Digest = resolver.ParseDigest("sha256:" + name)
		d.Tags = append(d.Tags, tag)
	}
	for _, v := range blocked {
		d.Blocks = append(d.Blocks, catalog.Block{Source: name, Version: v, Reason: "bad " + v, BlockedBy: "test", BlockedAt: seen})
	}
	return d
}

func jujuData(t testing.TB, blocked ...string) catalog.SourceData {
	return sourceData(t, "jujud-operator", mustParser(t, resolver.SchemeJuju, ""), jujuTags, blocked...)
}

func k3sData(t testing.TB, blocked ...string) catalog.SourceData {
	return sourceData(t, "k3s-upgrade", mustParser(t, resolver.SchemeSemver, `k3s(\d+)`), k3sTags, blocked...)
}

// channelserver-style channel: the stream is testing (channelserver sees
// every non-draft release), the regexps do the selecting.
func csChannel(name, include, exclude string) catalog.Channel {
	c := catalog.Channel{Name: name, Source: "k3s-upgrade", Stream: resolver.Testing}
	if include != "" {
		c.Include = regexp.MustCompile(include)
	}
	if exclude != "" {
		c.Exclude = regexp.MustCompile(exclude)
	}
	return c
}

// golden compares got, as indented JSON, with testdata/golden/name.json;
// -update rewrites the file.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatalf("marshal %s: %v", name, err)
	}
	b = append(b, '\n')
	testutil.Golden(t, filepath.Join("testdata", "golden", name+".json"), b)
}

func canon(t *resolver.Tag) string {
	if t == nil {
		return ""
	}
	return t.Version.String()
}

var testTime = time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
