package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/signed"
	"github.com/tidemark-dev/tidemark/store"
)

// stamp is a build that writes the next timestamp version.
func stamp(st signed.State) (*signed.Write, error) {
	v := st.Latest[signed.Timestamp].Version + 1
	return &signed.Write{Meta: []signed.Meta{{Role: signed.Timestamp, Version: v, Body: []byte("{}"), Expires: time.Now().Add(time.Hour)}}}, nil
}

// TestOneSignerPublishesForward: one replica at a time holds the signer
// lock; a publication records its digest and store revision, one from an
// older store revision than the last publication's is refused and writes
// nothing, and a lock given up publishes nothing.
func TestOneSignerPublishesForward(t *testing.T) {
	ctx := context.Background()
	st, u := newStore(t, "src")
	other, err := store.Open(ctx, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := st.LastTUFPublication(ctx); err == nil {
		t.Fatal("a last publication before any")
	}
	lock, held, err := st.TakeSignerLock(ctx)
	if err != nil || !held {
		t.Fatalf("signer lock: held %v, %v", held, err)
	}
	if _, held, err := other.TakeSignerLock(ctx); err != nil || held {
		t.Fatalf("a second replica took the held signer lock (%v)", err)
	}
	digest := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	if wrote, err := lock.PublishTUF(ctx, signed.Publication{ConfigDigest: digest, StoreRevision: 7, Replica: "a"}, stamp); err != nil || !wrote {
		t.Fatalf("publish at revision 7: %v %v", wrote, err)
	}
	p, err := other.LastTUFPublication(ctx)
	if err != nil || p.ConfigDigest != digest || p.StoreRevision != 7 || p.Replica != "a" || p.Timestamp != 1 {
		t.Fatalf("last publication %+v (%v)", p, err)
	}
	wrote, err := lock.PublishTUF(ctx, signed.Publication{ConfigDigest: digest, StoreRevision: 6, Replica: "a"}, stamp)
	if !errors.Is(err, signed.ErrBehind) || wrote {
		t.Fatalf("publish from revision 6 after 7: %v %v, want refused as behind", wrote, err)
	}
	if m, err := st.TUFMeta(ctx, signed.Timestamp, 0); err != nil || m.Version != 1 {
		t.Errorf("timestamp version %d (%v) after a refused publication, want 1", m.Version, err)
	}
	lock.Release()
	wrote, err = lock.PublishTUF(ctx, signed.Publication{ConfigDigest: digest, StoreRevision: 8, Replica: "a"}, stamp)
	if !errors.Is(err, signed.ErrLockLost) || wrote {
		t.Fatalf("publish after release: %v %v, want refused, the lock lost", wrote, err)
	}
	next, held, err := other.TakeSignerLock(ctx)
	if err != nil || !held {
		t.Fatalf("the lock after its holder gave it up: held %v, %v", held, err)
	}
	defer next.Release()
	if wrote, err := next.PublishTUF(ctx, signed.Publication{ConfigDigest: digest, StoreRevision: 7, Replica: "b"}, stamp); err != nil || !wrote {
		t.Fatalf("the next holder at the same revision: %v %v", wrote, err)
	}
}
