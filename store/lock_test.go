package store_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// killLockHolders ends the sessions holding advisory locks on u's database,
// from the admin database as an operator or a restart would.
func killLockHolders(t *testing.T, u string) int {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	rows := query(t, storetest.AdminURL(t), `select pg_terminate_backend(pid) from pg_locks
		where locktype = 'advisory' and database = (select oid from pg_database where datname = $1)`,
		strings.TrimPrefix(pu.Path, "/"))
	return len(rows)
}

func openStores(t *testing.T, n int) (string, []*store.Store) {
	t.Helper()
	u := storetest.URL(t)
	var out []*store.Store
	for range n {
		st, err := store.Open(context.Background(), u, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		out = append(out, st)
	}
	return u, out
}

func TestIndexerLockIsExclusiveUntilReleased(t *testing.T) {
	ctx := context.Background()
	u, sts := openStores(t, 2)
	a, b := sts[0], sts[1]
	lockA, held, err := a.TryIndexerLock(ctx)
	if err != nil || !held || lockA == nil {
		t.Fatalf("first replica: lock %v, held %v, err %v", lockA, held, err)
	}
	lockB, held, err := b.TryIndexerLock(ctx)
	if err != nil || held || lockB != nil {
		t.Fatalf("second replica while first holds: lock %v, held %v, err %v", lockB, held, err)
	}
	lockB.Release() // a nil *IndexerLock: a no-op, must not panic
	lockA.Release()
	lockA.Release() // twice is fine
	select {
	case <-lockA.Lost():
		t.Error("Lost fired after Release")
	default:
	}
	lockB, held, err = b.TryIndexerLock(ctx)
	if err != nil || !held {
		t.Fatalf("second replica after release: held %v, err %v", held, err)
	}
	// A holder that dies (its session ends) frees the lock.
	if n := killLockHolders(t, u); n != 1 {
		t.Fatalf("killed %d lock holders, want 1", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		lock, held, err := a.TryIndexerLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if held {
			lock.Release()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("lock not freed after its holder's session died")
		}
		time.Sleep(50 * time.Millisecond)
	}
	lockB.Release()
}

func TestIndexerLockSignalsLossOfItsSession(t *testing.T) {
	ctx := context.Background()
	u, sts := openStores(t, 1)
	st := sts[0]
	// A 1ms interval pings hundreds of times below; each ping still has
	// the default patience, so a slow answer on a loaded machine is not a
	// lost session (it was, while the ping's timeout equalled its interval).
	store.SetLockPing(st, time.Millisecond)
	lock, held, err := st.TryIndexerLock(ctx)
	if err != nil || !held {
		t.Fatalf("held %v, err %v", held, err)
	}
	defer lock.Release()
	// A healthy lock survives many quiet-connection pings.
	select {
	case <-lock.Lost():
		t.Fatal("Lost fired while the session was alive")
	case <-time.After(300 * time.Millisecond):
	}
	if n := killLockHolders(t, u); n != 1 {
		t.Fatalf("killed %d lock holders, want 1", n)
	}
	select {
	case <-lock.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not fire within 5s of the session's end")
	}
	// Once lost, the lock is free for anyone, this store included.
	again, held, err := st.TryIndexerLock(ctx)
	if err != nil || !held {
		t.Fatalf("after loss: held %v, err %v", held, err)
	}
	again.Release()
	lock.Release() // after Lost: closes quietly
}
