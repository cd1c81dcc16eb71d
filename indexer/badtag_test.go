package indexer

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

// serveTagList answers the tag list of every repository with body, as a
// registry that lists names it should not would.
func serveTagList(reg *testRegistry, body string) {
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if !strings.HasSuffix(req.URL.Path, "/tags/list") {
				return false
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, body)
			return true
		}
	})
}

func TestTagWithANulByteIsUnparsedNotAFailedScan(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0", "v1.1.0")
	st, ix := newStoreIndexer(t, reg)
	ctx := context.Background()
	// A NUL escaped in JSON, and a raw byte that is not UTF-8 (which the
	// JSON decoder turns into U+FFFD, a storable name).
	serveTagList(reg, `{"name":"app","tags":["v1.0.0","v1.1.0","v1.2.0\u0000evil","bad`+"\xff"+`"]}`)
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatalf("scan: %v", err)
	}
	got := indexed(t, st, ix)
	if s := got.LastScan; s == nil || s.Outcome != "ok" || s.TagsSeen != 4 {
		t.Fatalf("last scan = %+v, want ok with 4 tags", s)
	}
	tags := byName(got.Tags)
	want := []string{`"v1.2.0\x00evil"`, "bad\ufffd", "v1.0.0", "v1.1.0"}
	if diff := cmp.Diff(want, names(got.Tags)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if nul := tags[`"v1.2.0\x00evil"`]; nul.Valid || !strings.Contains(nul.ParseError(), "NUL") {
		t.Errorf("NUL tag = %+v, want unparsed saying NUL", nul)
	}
	if !tags["v1.0.0"].Valid || tags["v1.0.0"].Digest.IsZero() {
		t.Errorf("v1.0.0 = %+v, want valid with its digest", tags["v1.0.0"])
	}
	if m := reg.manifests.Load(); m != 2 {
		t.Errorf("manifest requests = %d, want 2: never one for a name outside the tag grammar", m)
	}
}

// refusingStore is a database that refuses to write a listing (a fault a
// real Postgres gives only for data the indexer now keeps out) but records
// failures.
type refusingStore struct{ Store }

func (s refusingStore) ApplyScan(ctx context.Context, r resolver.ScanResult) (catalog.Scan, error) {
	if r.Err == nil {
		return catalog.Scan{}, errors.New(`apply scan of source "app": invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`)
	}
	return s.Store.ApplyScan(ctx, r)
}

func TestScanThatFailsWhileRecordingIsRecordedAsFailed(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	st, ix := newStoreIndexer(t, reg)
	ctx := context.Background()
	if err := ix.ScanNow(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	first := indexed(t, st, ix).LastScan
	ix.store = refusingStore{st}
	err := ix.ScanNow(ctx, "app")
	if err == nil || !strings.Contains(err.Error(), "SQLSTATE 22021") {
		t.Fatalf("scan err = %v, want the refused write", err)
	}
	got := indexed(t, st, ix)
	if s := got.LastScan; s == nil || s.ID == first.ID || s.Outcome != "failed" || !strings.Contains(s.Error, "recording scan") {
		t.Errorf("last scan = %+v, want a failed scan saying recording failed", s)
	}
	if got.LastOK == nil || got.LastOK.ID != first.ID {
		t.Errorf("last ok = %+v, want the first scan", got.LastOK)
	}
	if p := ix.Status("app"); !strings.Contains(p.LastError, "SQLSTATE 22021") {
		t.Errorf("status last error = %q", p.LastError)
	}
}
