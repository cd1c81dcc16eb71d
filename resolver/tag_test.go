package resolver

import "testing"

// TestRareTextsAreCopiedOnWrite: a Tag's rare texts sit behind a pointer
// that copies of the Tag share, so setting one on a copy (a snapshot's
// view blocking a version, a load recording a re-tag) must not reach the
// Tag it was copied from.
func TestRareTextsAreCopiedOnWrite(t *testing.T) {
	p := MustParser(SchemeSemver, "")
	bad := p.Classify("latest", nil)
	if bad.Valid || bad.ParseError() == "" {
		t.Fatalf("Classify(latest) = valid %v, parse error %q; want invalid with a reason", bad.Valid, bad.ParseError())
	}
	stored := p.Classify("1.0.0", nil)
	if stored.ParseError() != "" || stored.PreviousDigest() != "" || stored.rare != nil {
		t.Fatalf("a valid tag holds rare texts: %+v", stored.rare)
	}
	stored.SetPreviousDigest("sha256:old")
	view := VersionView{Tag: stored}
	view.Block("CVE-2026-1")
	if !view.Blocked || view.BlockReason() != "CVE-2026-1" || view.PreviousDigest() != "sha256:old" {
		t.Errorf("view: blocked %v %q, previous %q", view.Blocked, view.BlockReason(), view.PreviousDigest())
	}
	if (VersionView{Tag: stored}).BlockReason() != "" {
		t.Error("blocking a view blocked the stored tag it was copied from")
	}
	again := stored
	again.SetPreviousDigest("sha256:newer")
	if stored.PreviousDigest() != "sha256:old" || again.PreviousDigest() != "sha256:newer" {
		t.Errorf("previous digests: stored %q, copy %q", stored.PreviousDigest(), again.PreviousDigest())
	}
	if v := (VersionView{}); v.BlockReason() != "" || v.PreviousDigest() != "" || v.ParseError() != "" {
		t.Error("the zero view holds texts")
	}
}
