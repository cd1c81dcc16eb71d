package server

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// TestSnapshotsSayWhichStoreRevisionTheyInclude: a write through one
// replica moves the store revision; the other replica's snapshot, once it
// has applied the change, says it includes that revision, and so does the
// writer's own (which hears its own change as a revision alone). A
// signer's publication records this revision and never goes below it.
func TestSnapshotsSayWhichStoreRevisionTheyInclude(t *testing.T) {
	env := newPGEnv(t, Options{})
	stB := openStore(t, env.url)
	srvB, _, _ := env.serve(stB, Options{})
	listen(t, env, env.st, env.srv)
	listen(t, env, stB, srvB)
	ctx := context.Background()
	before, err := env.st.StoreRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, etag := channel(t, env.ts, "v1.33")
	res, body := do(t, env, env.ts, http.MethodPut, "/api/v1/channels/v1.33/pin", "ci-promote", `{"version":"v1.33.4+k3s1"}`, "If-Match", etag)
	if res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	after, err := env.st.StoreRevision(ctx)
	if err != nil || after <= before {
		t.Fatalf("store revision %d after a pin, was %d (%v): want it moved", after, before, err)
	}
	for name, srv := range map[string]*Server{"the other replica": srvB, "the writer": env.srv} {
		deadline := time.Now().Add(5 * time.Second)
		for srv.Snapshots().Current().StoreRevision < after {
			if time.Now().After(deadline) {
				t.Fatalf("%s's snapshot includes revision %d, want %d", name, srv.Snapshots().Current().StoreRevision, after)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got, _ := channel(t, newValidatingServer(t, srvB), "v1.33"); str(got.Version) != "v1.33.4+k3s1" {
		t.Errorf("the other replica at revision %d serves %s, want the pin", after, str(got.Version))
	}
}
