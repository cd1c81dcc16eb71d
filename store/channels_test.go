package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
)

func TestPinUnpinKeepsRevisionAndAudit(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	got := listen(t, st)

	steps := []struct {
		name    string
		do      func() (catalog.ChannelState, error)
		wantErr error
		wantPin string
		wantRev int64
	}{
		{"first pin from revision 0", func() (catalog.ChannelState, error) {
			return st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "2.9.1", Digest: "sha256:a", Actor: "alice", Reason: "promote", IfRevision: 0, From: "2.9.0"})
		}, nil, "2.9.1", 1},
		{"stale revision is a conflict", func() (catalog.ChannelState, error) {
			return st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "2.9.2", Digest: "sha256:b", Actor: "bob", Reason: "late", IfRevision: 0})
		}, resolver.ErrConflict, "", 0},
		{"current revision pins", func() (catalog.ChannelState, error) {
			return st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "2.9.2", Digest: "sha256:b", Actor: "bob", Reason: "fix", IfRevision: 1})
		}, nil, "2.9.2", 2},
		{"any revision pins", func() (catalog.ChannelState, error) {
			return st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "2.9.3", Digest: "sha256:c", Actor: "carol", Reason: "", IfRevision: resolver.AnyRevision})
		}, nil, "2.9.3", 3},
		{"unpin", func() (catalog.ChannelState, error) {
			return st.Unpin(ctx, resolver.ChannelChange{Channel: "stable", Actor: "alice", Reason: "follow the stream", IfRevision: 3, To: "2.9.4"})
		}, nil, "", 4},
		{"unpin of an unpinned channel is not found", func() (catalog.ChannelState, error) {
			return st.Unpin(ctx, resolver.ChannelChange{Channel: "stable", Actor: "alice", Reason: "", IfRevision: resolver.AnyRevision})
		}, resolver.ErrNotFound, "", 0},
		{"empty version is invalid", func() (catalog.ChannelState, error) {
			return st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "", Digest: "", Actor: "alice", Reason: "", IfRevision: resolver.AnyRevision})
		}, resolver.ErrInvalid, "", 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			state, err := s.do()
			if !errors.Is(err, s.wantErr) {
				t.Fatalf("err = %v, want %v", err, s.wantErr)
			}
			if err != nil {
				return
			}
			if state.Pin != s.wantPin || state.Revision != s.wantRev || state.UpdatedAt.IsZero() || (state.Pin != "") == state.PinnedAt.IsZero() {
				t.Errorf("state = %+v, want pin %q revision %d", state, s.wantPin, s.wantRev)
			}
			if m := next(t, got); m["channel"] != "stable" {
				t.Errorf("notification %v", m)
			}
		})
	}
	stored, err := st.ChannelState(ctx, "stable")
	if err != nil || stored.Revision != 4 || stored.Pin != "" {
		t.Errorf("ChannelState = %+v, %v", stored, err)
	}
	if never, err := st.ChannelState(ctx, "never"); err != nil || never != (catalog.ChannelState{}) {
		t.Errorf("ChannelState(never) = %+v, %v; want zero", never, err)
	}

	hist, err := st.History(ctx, "stable")
	if err != nil {
		t.Fatal(err)
	}
	want := []resolver.AuditEvent{
		{Actor: "alice", Action: "unpin", Channel: "stable", From: "2.9.3", To: "2.9.4", Reason: "follow the stream"},
		{Actor: "carol", Action: "pin", Channel: "stable", From: "2.9.2", To: "2.9.3"},
		{Actor: "bob", Action: "pin", Channel: "stable", From: "2.9.1", To: "2.9.2", Reason: "fix"},
		// The caller's From (what the stream served) is recorded; without
		// one, the previous pin is (the rows above).
		{Actor: "alice", Action: "pin", Channel: "stable", From: "2.9.0", To: "2.9.1", Reason: "promote"},
	}
	if diff := cmp.Diff(want, hist, cmpopts.IgnoreFields(resolver.AuditEvent{}, "ID", "At")); diff != "" {
		t.Errorf("history, newest first (-want +got):\n%s", diff)
	}
	if none, err := st.History(ctx, "other"); err != nil || none == nil || len(none) != 0 {
		t.Errorf("History(other) = %#v, %v; want empty, non-nil", none, err)
	}
}

func TestConcurrentPinsWithOneRevisionExactlyOneWins(t *testing.T) {
	st, _ := newStore(t)
	ctx := context.Background()
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Version: "1.0." + string(rune('a'+i)), Digest: "", Actor: "racer", Reason: "", IfRevision: 0})
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, resolver.ErrConflict):
			t.Errorf("racer %d: %v, want ErrConflict or success", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d racers won, want exactly 1", won)
	}
	hist, err := st.History(ctx, "stable")
	if err != nil || len(hist) != 1 {
		t.Fatalf("history has %d events (%v), want the winner's only", len(hist), err)
	}
	if s, _ := st.ChannelState(ctx, "stable"); s.Revision != 1 {
		t.Errorf("revision = %d, want 1", s.Revision)
	}
}

func TestBlockUnblock(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	b, err := st.Block(ctx, "src", "2.9.1", "alice", "cve-1")
	if err != nil || b.Reason != "cve-1" || b.BlockedBy != "alice" || b.BlockedAt.IsZero() {
		t.Fatalf("Block = %+v, %v", b, err)
	}
	again, err := st.Block(ctx, "src", "2.9.1", "bob", "other")
	if err != nil || again != b {
		t.Errorf("second Block = %+v, %v; want the first block unchanged", again, err)
	}
	data, _, err := st.Load(ctx, []catalog.Source{source(t, "src")})
	if err != nil || len(data[0].Blocks) != 1 {
		t.Fatalf("Load blocks = %+v, %v", data, err)
	}
	if err := st.Unblock(ctx, "src", "2.9.1", "carol", "fixed"); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"unblock again is not found", st.Unblock(ctx, "src", "2.9.1", "carol", ""), resolver.ErrNotFound},
		{"block of an unknown source is not found", func() error { _, err := st.Block(ctx, "nope", "1", "a", ""); return err }(), resolver.ErrNotFound},
		{"block without a version is invalid", func() error { _, err := st.Block(ctx, "src", "", "a", ""); return err }(), resolver.ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("err = %v, want %v", tt.err, tt.want)
			}
		})
	}
	hist, err := st.SourceHistory(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	want := []resolver.AuditEvent{
		{Actor: "carol", Action: "unblock", Source: "src", To: "2.9.1", Reason: "fixed"},
		{Actor: "alice", Action: "block", Source: "src", To: "2.9.1", Reason: "cve-1"},
	}
	if diff := cmp.Diff(want, hist, cmpopts.IgnoreFields(resolver.AuditEvent{}, "ID", "At")); diff != "" {
		t.Errorf("source history (-want +got):\n%s", diff)
	}
}

// TestPinRefusesABlockedVersionInItsTransaction: a block recorded a moment
// ago (say through another replica, whose snapshot this one has not seen)
// still stops a pin, and the refused pin leaves no trace.
func TestPinRefusesABlockedVersionInItsTransaction(t *testing.T) {
	st, _ := newStore(t, "src")
	ctx := context.Background()
	if _, err := st.Block(ctx, "src", "2.9.1", "alice", "cve-1"); err != nil {
		t.Fatal(err)
	}
	_, err := st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Source: "src", Version: "2.9.1", Actor: "bob", IfRevision: resolver.AnyRevision})
	if !errors.Is(err, resolver.ErrUnprocessable) || !strings.Contains(err.Error(), "cve-1") {
		t.Fatalf("pin of a blocked version: %v, want ErrUnprocessable naming the block", err)
	}
	if hist, err := st.History(ctx, "stable"); err != nil || len(hist) != 0 {
		t.Errorf("history after a refused pin: %+v, %v; want none", hist, err)
	}
	if _, err := st.Pin(ctx, resolver.ChannelChange{Channel: "stable", Source: "src", Version: "2.9.2", Actor: "bob", IfRevision: resolver.AnyRevision}); err != nil {
		t.Errorf("pin of an unblocked version: %v", err)
	}
}
