package snapshot

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// TestSnapshotMemoryPerTag holds the snapshot's memory per indexed tag: a
// replica keeps every tag of every source, and at a million tags each 100
// bytes is 100 MB of RSS (issue 19's goal is 1 GB for all of it). Each
// present tag is held once; a second copy of every tag cost ~330 bytes.
// 358 bytes now (was 458): the limit leaves room for noise, not for one
// more string or time.Time in Tag.
func TestSnapshotMemoryPerTag(t *testing.T) {
	perTag := snapshotBytesPerTag(t, New, false)
	if perTag > 200 {
		t.Errorf("snapshot holds %d bytes per tag, want <= 200", perTag)
	}
}

// TestTakeDropsTags: a load of every source hands its data to
// Take, which lets each source's tags go once indexed, so the
// caller's data does not keep a second copy of every tag alive.
func TestTakeDropsTags(t *testing.T) {
	perTag := snapshotBytesPerTag(t, Take, true)
	if perTag > 200 {
		t.Errorf("snapshot and the data taken hold %d bytes per tag, want <= 200", perTag)
	}
}

// snapshotBytesPerTag is the heap a snapshot of 20,000 tags (with what the
// store hands over: names, digests, parsed versions) holds per tag; with
// keep, the data handed over stays referenced too.
func snapshotBytesPerTag(t *testing.T, build func([]catalog.Channel, []catalog.SourceData, map[string]catalog.ChannelState, time.Time) *Snapshot, keep bool) int64 {
	const n = 20_000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("1.%d.%d", i/100, i%100)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	snap, kept := buildSnapshot(t, build, names, keep)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTag := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	runtime.KeepAlive(snap)
	runtime.KeepAlive(kept)
	t.Logf("%d bytes per tag", perTag)
	return perTag
}

// buildSnapshot hands build the tags named, with real-length digests
// ("sha256:" and 64 hex digits), and returns the data only with keep.
// Not inlined: the data must not stay alive in the caller's frame.
//
//go:noinline
func buildSnapshot(t *testing.T, build func([]catalog.Channel, []catalog.SourceData, map[string]catalog.ChannelState, time.Time) *Snapshot, names []string, keep bool) (*Snapshot, []catalog.SourceData) {
	channels := []catalog.Channel{{Name: "app", Source: "app", Stream: resolver.Released}}
	data := []catalog.SourceData{sourceData(t, "app", mustParser(t, resolver.SchemeSemver, ""), names)}
	for i := range data[0].Tags {
		data[0].Tags[i].Digest = resolver.ParseDigest(fmt.Sprintf("sha256:%064x", i))
	}
	snap := build(channels, data, nil, testTime)
	if !keep {
		return snap, nil
	}
	return snap, data
}
