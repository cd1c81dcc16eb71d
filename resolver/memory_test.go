package resolver

import (
	"fmt"
	"runtime"
	"testing"
)

// TestSnapshotMemoryPerTag holds the snapshot's memory per indexed tag: a
// replica keeps every tag of every source, and at a million tags each 100
// bytes is 100 MB of RSS (issue 19's goal is 1 GB for all of it). Each
// present tag is held once; a second copy of every tag cost ~330 bytes.
// 358 bytes now (was 458): the limit leaves room for noise, not for one
// more string or time.Time in Tag.
func TestSnapshotMemoryPerTag(t *testing.T) {
	const n = 20_000
	p := mustParser(t, SchemeSemver, "")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("1.%d.%d", i/100, i%100)
	}
	channels := []Channel{{Name: "app", Source: "app", Stream: Released}}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// What the store hands over (names, digests, parsed versions) counts:
	// the snapshot keeps it.
	data := []SourceData{sourceData(t, "app", p, names)}
	for i := range data[0].Tags {
		// A registry's digest: "sha256:" and 64 hex digits, one per tag.
		data[0].Tags[i].Digest = fmt.Sprintf("sha256:%064x", i)
	}
	snap := NewSnapshot(channels, data, nil, testTime)
	data = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTag := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(snap)
	t.Logf("%d bytes per tag", perTag)
	if perTag > 370 {
		t.Errorf("snapshot holds %d bytes per tag, want <= 370", perTag)
	}
}
