package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// The digest re-check time survives the process: a new source starts
// counting when it is recorded, a set time reads back, and a source never
// recorded is not found.
func TestRecheckedAtIsKeptPerSource(t *testing.T) {
	before := time.Now().Add(-time.Minute) // the database clock may lag a little
	st, _ := newStore(t, "a", "b")
	ctx := context.Background()

	at, err := st.RecheckedAt(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) || at.After(time.Now().Add(time.Minute)) {
		t.Errorf("new source rechecked_at = %v, want about now", at)
	}
	old := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := st.SetRecheckedAt(ctx, "a", old); err != nil {
		t.Fatal(err)
	}
	if at, err := st.RecheckedAt(ctx, "a"); err != nil || !at.Equal(old) {
		t.Errorf("after set: %v, %v; want %v", at, err, old)
	}
	if at, err := st.RecheckedAt(ctx, "b"); err != nil || at.Equal(old) {
		t.Errorf("other source: %v, %v; want its own time", at, err)
	}
	if _, err := st.RecheckedAt(ctx, "nope"); !errors.Is(err, resolver.ErrNotFound) {
		t.Errorf("RecheckedAt of an unknown source: %v, want ErrNotFound", err)
	}
	if err := st.SetRecheckedAt(ctx, "nope", old); !errors.Is(err, resolver.ErrNotFound) {
		t.Errorf("SetRecheckedAt of an unknown source: %v, want ErrNotFound", err)
	}
}
