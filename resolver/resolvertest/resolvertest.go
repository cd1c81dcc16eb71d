// Package resolvertest builds resolver values for tests of the packages
// that answer from snapshots: sources and scanned tags as the indexer
// records them.
package resolvertest

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// SemverSource is a k3s-like source with build revisions (k3s1, k3s2).
func SemverSource(t testing.TB, name, image string) catalog.Source {
	t.Helper()
	p, err := resolver.NewParser(resolver.SchemeSemver, `k3s(\d+)`)
	if err != nil {
		t.Fatalf("NewParser: %v", err)
	}
	return catalog.Source{Name: name, Image: image, Parser: p}
}

// SourceData classifies tags the way the indexer does, as seen at
// scanned, and gives each a digest derived from its name (or from digests
// when given); its last scan ran from scanned for two seconds.
func SourceData(src catalog.Source, tags []string, digests map[string]string, scanned time.Time) catalog.SourceData {
	sd := catalog.SourceData{Source: src}
	for _, name := range tags {
		tag := src.Classify(name)
		tag.Present = true
		tag.FirstSeen, tag.LastSeen = resolver.InstantOf(scanned), resolver.InstantOf(scanned)
		if d, ok := digests[name]; ok {
			tag.Digest = resolver.ParseDigest(d)
		} else {
			tag.Digest = resolver.ParseDigest(fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(name))))
		}
		sd.Tags = append(sd.Tags, tag)
	}
	scan := &catalog.Scan{ID: 7, Source: src.Name, Started: scanned, Finished: scanned.Add(2 * time.Second),
		Outcome: "ok", Complete: true, TagsSeen: len(tags), TagsNew: len(tags), Requests: 3}
	sd.LastScan, sd.LastOK = scan, scan
	return sd
}
