package indexer

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestPingIsRememberedPerRegistry checks that listings after the first
// skip the authentication ping (still authenticating with a token), that
// an answer older than pingTTL is asked again, and that a registry whose
// authentication changed under the remembered answer costs one failed
// listing, after which the next one pings again and succeeds.
func TestPingIsRememberedPerRegistry(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0", "v1.1.0")
	var pings atomic.Int64
	reg.set(func(r *testRegistry) {
		r.fault = func(_ http.ResponseWriter, req *http.Request) bool {
			if req.URL.Path == "/v2/" {
				pings.Add(1)
			}
			return false
		}
	})
	ix := newTestIndexer(t, nil, reg, "app")
	now := time.Now()
	ix.pings.now = func() time.Time { return now }
	listOK := func(step string) {
		t.Helper()
		if tags, _, err := list(t, ix); err != nil || len(tags) != 2 {
			t.Fatalf("%s: listed %v, %v; want 2 tags", step, tags, err)
		}
	}

	listOK("first listing")
	first := pings.Load()
	if first == 0 {
		t.Fatal("the first listing did not ping the registry")
	}
	listOK("second listing")
	if n := pings.Load() - first; n != 0 {
		t.Errorf("the second listing pinged %d times; want the answer remembered", n)
	}

	now = now.Add(pingTTL)
	listOK("listing after pingTTL")
	if pings.Load() == first {
		t.Error("a listing pingTTL later did not ping again")
	}

	// The registry starts asking for a token: the remembered "anonymous"
	// answer fails one listing, and is forgotten.
	reg.set(func(r *testRegistry) { r.token = "tok" })
	if _, _, err := list(t, ix); err == nil {
		t.Fatal("listed anonymously from a registry that now wants a token")
	}
	before, tokens := pings.Load(), reg.tokens.Load()
	listOK("listing after the failure")
	if pings.Load() == before || reg.tokens.Load() == tokens {
		t.Error("the listing after a failure did not ping and fetch a token")
	}
	before, tokens = pings.Load(), reg.tokens.Load()
	listOK("listing with the token challenge remembered")
	if pings.Load() != before || reg.tokens.Load() == tokens {
		t.Errorf("pings %d -> %d, tokens %d -> %d; want no ping and a token fetched",
			before, pings.Load(), tokens, reg.tokens.Load())
	}
}
