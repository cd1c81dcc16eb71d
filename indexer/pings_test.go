package indexer

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// registryCalls counts what reaches a test registry, by kind.
type registryCalls struct{ pings, lists atomic.Int64 }

func countCalls(reg *testRegistry) *registryCalls {
	c := &registryCalls{}
	reg.set(func(r *testRegistry) {
		r.fault = func(_ http.ResponseWriter, req *http.Request) bool {
			switch {
			case req.URL.Path == "/v2/":
				c.pings.Add(1)
			case strings.HasSuffix(req.URL.Path, "/tags/list"):
				c.lists.Add(1)
			}
			return false
		}
	})
	return c
}

// TestFirstContactListsWithoutAPing checks the handshake's round trips: an
// anonymous source's first listing is one request (its answer is the
// ping's too), later ones skip the ping while the answer is remembered
// (pingTTL), a registry whose authentication changed under the
// remembered answer costs one failed listing and is then asked again (the
// listing's 401 is the challenge: a token, then the list), and a source
// with credentials pings as go-containerregistry does.
func TestFirstContactListsWithoutAPing(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0", "v1.1.0")
	calls := countCalls(reg)
	ix := newTestIndexer(t, nil, reg, "app")
	now := time.Now()
	ix.pings.now = func() time.Time { return now }
	step := func(name string, pings, lists, tokens int64) {
		t.Helper()
		p0, l0, t0 := calls.pings.Load(), calls.lists.Load(), reg.tokens.Load()
		if tags, _, err := list(t, ix); err != nil || len(tags) != 2 {
			t.Fatalf("%s: listed %v, %v; want 2 tags", name, tags, err)
		}
		p, l, k := calls.pings.Load()-p0, calls.lists.Load()-l0, reg.tokens.Load()-t0
		if p != pings || l != lists || k != tokens {
			t.Errorf("%s: %d pings, %d list requests, %d tokens; want %d, %d, %d", name, p, l, k, pings, lists, tokens)
		}
	}

	step("first listing", 0, 1, 0)
	step("second listing", 0, 1, 0)
	now = now.Add(pingTTL)
	if _, ok := ix.pings.get("http://" + reg.host); ok {
		t.Error("the ping's answer is still remembered pingTTL later")
	}
	step("listing after pingTTL", 0, 1, 0)

	// The registry starts asking for a token: the remembered "anonymous"
	// answer fails one listing and is forgotten.
	reg.set(func(r *testRegistry) { r.token = "tok" })
	if _, _, err := list(t, ix); err == nil {
		t.Fatal("listed anonymously from a registry that now wants a token")
	}
	step("listing after the failure", 0, 2, 1)
	step("listing with the challenge remembered", 0, 1, 1)

	withPassword := newTestIndexer(t, nil, reg, "app", func(s *Source) {
		s.Username, s.Password = "bob", func() (string, error) { return "secret", nil }
	})
	p0 := calls.pings.Load()
	if tags, _, err := list(t, withPassword); err != nil || len(tags) != 2 {
		t.Fatalf("source with credentials: listed %v, %v", tags, err)
	}
	if calls.pings.Load() == p0 {
		t.Error("a source with credentials did not ping: its first request must not go out anonymously")
	}
}

// TestProbeAnswerIsNotACredentialedSourcesPing: a probe's 200 says what an
// anonymous listing of one repository gets, not what a source with
// credentials should send; such a source pings for itself.
func TestProbeAnswerIsNotACredentialedSourcesPing(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	calls := countCalls(reg)
	anon := newTestIndexer(t, nil, reg, "app")
	if _, _, err := list(t, anon); err != nil || calls.pings.Load() != 0 {
		t.Fatalf("anonymous first listing: %v, %d pings; want it listed by the probe", err, calls.pings.Load())
	}
	// The same cache, a source with credentials.
	src := anon.order[0]
	src.Username, src.Password = "bob", func() (string, error) { return "secret", nil }
	if _, _, err := list(t, anon); err != nil {
		t.Fatal(err)
	}
	if calls.pings.Load() == 0 {
		t.Error("a source with credentials took the anonymous probe's answer as its ping")
	}
}

// silentHTTPS stands in for a filtered https port (no real registry can be
// made to drop packets): https requests hang until their context ends,
// http ones reach the registry.
type silentHTTPS struct{ next http.RoundTripper }

func (s silentHTTPS) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "https" {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return s.next.RoundTrip(req)
}

// TestProbeFallsBackToHTTPWhenHTTPSNeverAnswers: for an insecure registry
// whose https never answers, the first listing goes on over http after
// probeFallback, as ggcr's ping does, instead of waiting for the request
// timeout.
func TestProbeFallsBackToHTTPWhenHTTPSNeverAnswers(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0", "v1.1.0")
	src := testSource(t, "app", reg.host+"/app")
	src.Timeout = 20 * time.Second
	ix, err := New(Options{Sources: []Source{src}, Store: unusedStore{}, Log: testLog(t),
		Transport: silentHTTPS{next: http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	ix.retry = fastRetry
	start := time.Now()
	tags, _, err := list(t, ix)
	if err != nil || len(tags) != 2 {
		t.Fatalf("listed %v, %v; want 2 tags over http", tags, err)
	}
	// The probe gives https probeFallback; ggcr's ping, should it run,
	// starts http after as long.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("first listing took %s, want about %s", took, probeFallback)
	}
	// The silent https is remembered with http's answer: the next listing
	// neither waits for it nor asks again.
	start = time.Now()
	if tags, _, err := list(t, ix); err != nil || len(tags) != 2 {
		t.Fatalf("second listing: %v, %v", tags, err)
	}
	if took := time.Since(start); took >= probeFallback {
		t.Errorf("second listing took %s; want it not to wait for https again", took)
	}
}
