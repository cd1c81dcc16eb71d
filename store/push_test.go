package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

func presentTags(t *testing.T, url, source string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range query(t, url, `select tag, digest from tags where source = $1 and present`, source) {
		out[r[0].(string)] = r[1].(string)
	}
	return out
}

func TestIndexTagWritesOnlyWhatChanged(t *testing.T) {
	st, url := newStore(t, "src")
	ctx := context.Background()
	src := source(t, "src")
	got := listen(t, st)

	tag := src.Classify("2.9.1")
	tag.Digest = resolver.ParseDigest("sha256:a")
	if changed, err := st.IndexTag(ctx, "src", tag, time.Now()); err != nil || !changed {
		t.Fatalf("first IndexTag = %v, %v; want changed", changed, err)
	}
	if m := next(t, got); m["kind"] != "scan" || m["source"] != "src" || m["tag"] != "2.9.1" {
		t.Errorf("notification %v, want a scan of src naming the tag", m)
	}
	if changed, err := st.IndexTag(ctx, "src", tag, time.Now()); err != nil || changed {
		t.Errorf("same tag again = %v, %v; want unchanged (a duplicate event writes nothing)", changed, err)
	}
	tag.Digest = resolver.ParseDigest("sha256:b")
	if changed, err := st.IndexTag(ctx, "src", tag, time.Now()); err != nil || !changed {
		t.Fatalf("re-tag = %v, %v; want changed", changed, err)
	}
	r := query(t, url, `select digest, previous_digest, retagged_at is not null, valid, canonical from tags where tag = '2.9.1'`)
	if r[0][0] != "sha256:b" || r[0][1] != "sha256:a" || r[0][2] != true || r[0][3] != true || r[0][4] != "2.9.1" {
		t.Errorf("row after re-tag = %v, want digest b, previous a, retagged, classified", r[0])
	}

	if changed, err := st.MarkTagAbsent(ctx, "src", "2.9.1"); err != nil || !changed {
		t.Fatalf("MarkTagAbsent = %v, %v; want changed", changed, err)
	}
	if tags := presentTags(t, url, "src"); len(tags) != 0 {
		t.Errorf("present tags after delete = %v, want none", tags)
	}
	if changed, err := st.MarkTagAbsent(ctx, "src", "2.9.1"); err != nil || changed {
		t.Errorf("second MarkTagAbsent = %v, %v; want unchanged", changed, err)
	}
	if _, err := st.IndexTag(ctx, "nosuch", tag, time.Now()); !errors.Is(err, resolver.ErrNotFound) {
		t.Errorf("IndexTag of an unknown source = %v, want ErrNotFound", err)
	}
	if _, err := st.IndexTag(ctx, "src", resolver.Tag{Name: "x"}, time.Now()); !errors.Is(err, resolver.ErrInvalid) {
		t.Errorf("IndexTag without a digest = %v, want ErrInvalid", err)
	}
}

// A complete listing that started before a push was indexed does not know
// the pushed tag; it must not mark it absent.
func TestScanListedBeforePushKeepsPushedTag(t *testing.T) {
	st, url := newStore(t, "src")
	ctx := context.Background()
	src := source(t, "src")
	old := src.Classify("2.9.0")
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: []resolver.Tag{old}}); err != nil {
		t.Fatal(err)
	}
	listingStarted := time.Now()
	time.Sleep(5 * time.Millisecond)
	pushed := src.Classify("2.9.1")
	pushed.Digest = resolver.ParseDigest("sha256:p")
	if _, err := st.IndexTag(ctx, "src", pushed, time.Now()); err != nil {
		t.Fatal(err)
	}
	_, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Started: listingStarted, Tags: []resolver.Tag{old}})
	if err != nil {
		t.Fatal(err)
	}
	if tags := presentTags(t, url, "src"); len(tags) != 2 {
		t.Errorf("present after the older listing = %v, want 2.9.0 and the pushed 2.9.1", tags)
	}
	// A listing that started after the push and lacks the tag does mark it.
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "src", Complete: true, Tags: []resolver.Tag{old}}); err != nil {
		t.Fatal(err)
	}
	if tags := presentTags(t, url, "src"); len(tags) != 1 {
		t.Errorf("present after a newer listing = %v, want only 2.9.0", tags)
	}
}
