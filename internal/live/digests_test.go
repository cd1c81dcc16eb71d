package live

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// fakeData serves one tag per source, with the digest last set for it,
// and counts the sources each read asked for.
type fakeData struct {
	mu      sync.Mutex
	digests map[string]string // by source
	reads   int               // LoadSources calls
	read    []string          // sources read, in order
}

func (f *fakeData) sourceData(src catalog.Source) catalog.SourceData {
	t := src.Classify("1.0.0")
	t.Digest = resolver.ParseDigest(f.digests[src.Name])
	return catalog.SourceData{Source: src, Tags: []resolver.Tag{t}}
}

func (f *fakeData) Load(_ context.Context, srcs []catalog.Source) ([]catalog.SourceData, map[string]catalog.ChannelState, error) {
	data, err := f.LoadSources(context.Background(), srcs)
	return data, map[string]catalog.ChannelState{}, err
}

func (f *fakeData) LoadSources(_ context.Context, srcs []catalog.Source) ([]catalog.SourceData, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	var out []catalog.SourceData
	for _, src := range srcs {
		f.read = append(f.read, src.Name)
		out = append(out, f.sourceData(src))
	}
	return out, nil
}

func (f *fakeData) LoadStates(context.Context) (map[string]catalog.ChannelState, error) {
	return map[string]catalog.ChannelState{}, nil
}

func (f *fakeData) setDigest(source, d string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.digests[source] = d
}

func (f *fakeData) counts() (reads, sources int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads, len(f.read)
}

func digestOf(i int) string { return fmt.Sprintf("sha256:%064x", i) }

// digestFixture runs Snapshots over n sources with DigestEvery every (far
// beyond the test, or 0), loaded once; swaps receives each snapshot swapped in.
func digestFixture(t *testing.T, n int, every time.Duration) (*Snapshots, *fakeData, chan *snapshot.Snapshot) {
	t.Helper()
	p, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		t.Fatal(err)
	}
	var srcs []catalog.Source
	for i := range n {
		srcs = append(srcs, catalog.Source{Name: fmt.Sprintf("s%d", i), Parser: p})
	}
	data := &fakeData{digests: map[string]string{}}
	s, err := New(Options{Data: data, Sources: srcs, DigestEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	swaps := make(chan *snapshot.Snapshot, 1000)
	s.Subscribe(func(_, next *snapshot.Snapshot) { swaps <- next })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, data, swaps
}

func nextSwap(t *testing.T, swaps chan *snapshot.Snapshot) *snapshot.Snapshot {
	t.Helper()
	select {
	case snap := <-swaps:
		return snap
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot swapped in")
		return nil
	}
}

func digestServed(t *testing.T, snap *snapshot.Snapshot, source string) string {
	t.Helper()
	v, err := snap.Version(source, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	return v.Digest.String()
}

// A digest phase of many batches rebuilds the snapshot once at once (the
// first batch after a quiet spell), then holds the rest until another
// change comes, which rebuilds every held source with it in one read.
func TestDigestBatchesRebuildTogether(t *testing.T) {
	s, data, swaps := digestFixture(t, 20, time.Hour)
	readsBefore, _ := data.counts()
	data.setDigest("s0", digestOf(1))
	s.Notify(snapshot.Change{Source: "s0", Digests: true, Revision: 10})
	if got := digestServed(t, nextSwap(t, swaps), "s0"); got != digestOf(1) {
		t.Fatalf("first batch: s0 served digest %q, want %q", got, digestOf(1))
	}
	// 100 batches over 20 sources, within DigestEvery: none rebuilds.
	for i := range 100 {
		src := fmt.Sprintf("s%d", i%20)
		data.setDigest(src, digestOf(100+i))
		s.Notify(snapshot.Change{Source: src, Digests: true, Revision: int64(11 + i)})
	}
	s.pendingMu.Lock()
	held := len(s.held.Sources)
	s.pendingMu.Unlock()
	if held != 20 {
		t.Errorf("%d sources held after 100 digest batches, want 20", held)
	}
	// A pin elsewhere rebuilds, and takes every held source along.
	s.Notify(snapshot.Change{Channel: "c", Revision: 200})
	snap := nextSwap(t, swaps)
	reads, sources := data.counts()
	if got := reads - readsBefore; got != 2 {
		t.Errorf("101 digest batches and a pin made %d reads, want 2", got)
	}
	if sources != 20+1+20 { // the first load, the first batch, the held ones
		t.Errorf("%d sources read, want %d", sources, 41)
	}
	for i := 80; i < 100; i++ {
		src := fmt.Sprintf("s%d", i%20)
		if got := digestServed(t, snap, src); got != digestOf(100+i) {
			t.Errorf("%s served digest %q, want the last batch's %q", src, got, digestOf(100+i))
		}
	}
	if snap.StoreRevision != 200 {
		t.Errorf("StoreRevision %d, want 200", snap.StoreRevision)
	}
	select {
	case extra := <-swaps:
		t.Errorf("another rebuild after the pin (revision %d)", extra.StoreRevision)
	case <-time.After(100 * time.Millisecond):
	}
}

// A replica's own write names only its revision; while digest batches
// are held it must not mark the snapshot as including that revision
// without them: it rebuilds them instead.
func TestHeldDigestsBeforeOwnRevision(t *testing.T) {
	s, data, swaps := digestFixture(t, 3, time.Hour)
	s.Notify(snapshot.Change{Source: "s0", Digests: true, Revision: 5})
	nextSwap(t, swaps)
	data.setDigest("s1", digestOf(7))
	s.Notify(snapshot.Change{Source: "s1", Digests: true, Revision: 6})
	s.Notify(snapshot.Change{Revision: 9}) // this replica's own write
	snap := nextSwap(t, swaps)
	if got := digestServed(t, snap, "s1"); got != digestOf(7) {
		t.Errorf("s1 served digest %q at revision %d, want %q", got, snap.StoreRevision, digestOf(7))
	}
	if snap.StoreRevision != 9 {
		t.Errorf("StoreRevision %d, want 9", snap.StoreRevision)
	}
}

// Without DigestEvery every digest batch rebuilds as it comes.
func TestDigestsWithoutDigestEvery(t *testing.T) {
	s, data, swaps := digestFixture(t, 2, 0)
	for i := range 3 {
		data.setDigest("s0", digestOf(i))
		s.Notify(snapshot.Change{Source: "s0", Digests: true})
		if got := digestServed(t, nextSwap(t, swaps), "s0"); got != digestOf(i) {
			t.Fatalf("batch %d: served %q, want %q", i, got, digestOf(i))
		}
	}
}
