package gates_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/internal/cosigntest"
)

// requests returns how many registry requests f made.
func (r *testRegistry) requests(f func()) int64 {
	before := r.rt.n.Load()
	f()
	return r.rt.n.Load() - before
}

func gateConfig(t *testing.T, key *gates.Key, platforms ...string) gates.Config {
	t.Helper()
	ps, err := gates.ParsePlatforms(platforms)
	if err != nil {
		t.Fatal(err)
	}
	return gates.Config{Platforms: ps, Key: key}
}

func check(t *testing.T, c *gates.Checker, r *testRegistry, d v1.Hash, cfg gates.Config) gates.Result {
	t.Helper()
	res, err := c.Check(context.Background(), r.repo, d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestCheckerNoChangeRescanMakesNoRequest(t *testing.T) {
	r := newRegistry(t)
	s := cosigntest.NewSignerOf(t, "ecdsa")
	cfg := gateConfig(t, s.Key(t), "linux/amd64", "linux/arm64")
	var digests []v1.Hash
	for i := range 20 {
		d := r.index(fmt.Sprintf("v1.33.%d-k3s1", i), "linux/amd64", "linux/arm64")
		p := cosigntest.Payload(t, r.repo, d)
		if i%2 == 0 {
			r.pushTagSignature(d, p, s.Sign(t, p))
		} else {
			r.pushReferrer(d, p, s.Sign(t, p))
		}
		digests = append(digests, d)
	}
	c := gates.NewChecker(4, 0, r.opts()...)
	scan := func() {
		for _, d := range digests {
			if res := check(t, c, r, d, cfg); !res.Pass(cfg) {
				t.Fatalf("%s: %+v, want pass", d, res)
			}
		}
	}
	first := r.requests(scan)
	if first == 0 {
		t.Fatal("first scan made no request")
	}
	if n := r.requests(scan); n != 0 {
		t.Errorf("no-change rescan of %d servable versions made %d requests, want 0 (first scan: %d)", len(digests), n, first)
	}
	t.Logf("first scan of %d versions: %d requests; rescan: 0", len(digests), first)
}

func TestCheckerAsksAgainWhileHeld(t *testing.T) {
	r := newRegistry(t)
	s := cosigntest.NewSignerOf(t, "ed25519")
	cfg := gateConfig(t, s.Key(t), "linux/amd64", "linux/arm64")
	d := r.index("v1.34.0-k3s1", "linux/amd64") // arm64 not pushed yet, nor the signature
	c := gates.NewChecker(1, 0, r.opts()...)

	res := check(t, c, r, d, cfg)
	if res.Pass(cfg) || len(res.Missing) != 1 || res.Missing[0] != "linux/arm64" || res.Signature.State != gates.SigMissing {
		t.Fatalf("got %+v, want linux/arm64 and the signature missing", res)
	}
	// The platforms of a digest never change, so only the signature is asked again.
	var again gates.Result
	n := r.requests(func() { again = check(t, c, r, d, cfg) })
	if n == 0 || again.Signature.State != gates.SigMissing {
		t.Errorf("held version re-checked with %d requests (%+v), want the signature asked again", n, again)
	}
	withPlatforms := gates.Config{Platforms: cfg.Platforms}
	if n := r.requests(func() { check(t, c, r, d, withPlatforms) }); n != 0 {
		t.Errorf("platforms of a known digest cost %d requests, want 0", n)
	}

	p := cosigntest.Payload(t, r.repo, d)
	r.pushTagSignature(d, p, s.Sign(t, p))
	if res := check(t, c, r, d, cfg); res.Signature.State != gates.SigOK || res.Pass(cfg) {
		t.Fatalf("after signing: %+v, want signature ok and still held by platforms", res)
	}
	if n := r.requests(func() { check(t, c, r, d, cfg) }); n != 0 {
		t.Errorf("a known valid signature and known platforms cost %d requests, want 0", n)
	}

	// arm64 pushed into the same tag: a new digest, checked afresh.
	d2 := r.index("v1.34.0-k3s1", "linux/amd64", "linux/arm64")
	p2 := cosigntest.Payload(t, r.repo, d2)
	r.pushReferrer(d2, p2, s.Sign(t, p2))
	if res := check(t, c, r, d2, cfg); !res.Pass(cfg) {
		t.Errorf("re-tagged complete index: %+v, want pass", res)
	}
}

func TestCheckerRemembersPerKeyAndForAWhile(t *testing.T) {
	r := newRegistry(t)
	s := cosigntest.NewSignerOf(t, "ecdsa")
	d := r.image("v1.35.0-k3s1", "linux", "amd64", "")
	p := cosigntest.Payload(t, r.repo, d)
	r.pushTagSignature(d, p, s.Sign(t, p))
	cfg := gateConfig(t, s.Key(t))

	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	c := gates.NewChecker(1, time.Hour, r.opts()...)
	gates.SetNow(c, func() time.Time { return now })
	check(t, c, r, d, cfg)
	if n := r.requests(func() { check(t, c, r, d, cfg) }); n != 0 {
		t.Errorf("second check cost %d requests, want 0", n)
	}

	other := gateConfig(t, cosigntest.NewSignerOf(t, "ecdsa").Key(t))
	var res gates.Result
	if n := r.requests(func() { res = check(t, c, r, d, other) }); n == 0 || res.Signature.State != gates.SigInvalid {
		t.Errorf("another key: %d requests, %+v; want a fresh check finding the signature invalid", n, res)
	}

	now = now.Add(time.Hour)
	if n := r.requests(func() { check(t, c, r, d, cfg) }); n == 0 {
		t.Error("a valid signature older than maxAge was not checked again")
	}
	if n := r.requests(func() { check(t, c, r, d, cfg) }); n != 0 {
		t.Errorf("re-checked signature cost %d requests, want 0", n)
	}
	c.Forget(d)
	if n := r.requests(func() { check(t, c, r, d, cfg) }); n == 0 {
		t.Error("a forgotten digest was not checked again")
	}
}

func TestCheckerBoundsConcurrency(t *testing.T) {
	for _, conc := range []int{2, 8} {
		t.Run(fmt.Sprintf("at most %d at once", conc), func(t *testing.T) {
			r := newRegistry(t)
			r.rt.delay = 5 * time.Millisecond // so that checks overlap
			cfg := gateConfig(t, cosigntest.NewSignerOf(t, "ecdsa").Key(t), "linux/amd64")
			var digests []v1.Hash
			for i := range 16 {
				digests = append(digests, r.image(fmt.Sprintf("v%d", i), "linux", "amd64", ""))
			}
			r.rt.reset()
			c := gates.NewChecker(conc, 0, r.opts()...)
			var wg sync.WaitGroup
			for _, d := range digests {
				wg.Go(func() {
					if _, err := c.Check(context.Background(), r.repo, d, cfg); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			got := r.rt.maxInFlight()
			if got > conc {
				t.Errorf("%d requests in flight at once, want at most %d", got, conc)
			}
			if conc == 8 && got <= 2 {
				t.Errorf("%d in flight with concurrency 8: the test cannot tell a bound from none", got)
			}
		})
	}
}
