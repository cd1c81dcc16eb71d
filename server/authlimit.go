package server

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed authentications per client address: a person mistyping a token
// gets a few tries at once, a guesser one a second, refused before the
// database is asked. Successes cost nothing, so a client that has never
// failed is never limited.
const (
	authFailRate  = 1
	authFailBurst = 10
	// maxAuthFailClients bounds the map: buckets that refilled are dropped
	// first, and if an address flood fills it anyway it starts over.
	maxAuthFailClients = 4096
)

type authFailures struct {
	rate  float64 // failures per second refilled
	burst int
	mu    sync.Mutex
	m     map[string]*rate.Limiter
}

func newAuthFailures(perSecond float64, burst int) *authFailures {
	return &authFailures{rate: perSecond, burst: burst, m: make(map[string]*rate.Limiter)}
}

// blocked says whether addr has used up its failures, and how many whole
// seconds until it may try again (for Retry-After).
func (a *authFailures) blocked(addr string) (int, bool) {
	a.mu.Lock()
	lim, ok := a.m[addr]
	a.mu.Unlock()
	if !ok {
		return 0, false
	}
	now := time.Now()
	if lim.TokensAt(now) >= 1 {
		return 0, false
	}
	wait := (1 - lim.TokensAt(now)) / a.rate
	return max(1, int(math.Ceil(wait))), true
}

// failed charges addr one failed authentication.
func (a *authFailures) failed(addr string) {
	now := time.Now()
	a.mu.Lock()
	lim, ok := a.m[addr]
	if !ok {
		if len(a.m) >= maxAuthFailClients {
			a.prune(now)
		}
		lim = rate.NewLimiter(rate.Limit(a.rate), a.burst)
		a.m[addr] = lim
	}
	a.mu.Unlock()
	lim.AllowN(now, 1)
}

// prune drops the buckets that are full again; a.mu is held.
func (a *authFailures) prune(now time.Time) {
	for addr, lim := range a.m {
		if lim.TokensAt(now) >= float64(a.burst) {
			delete(a.m, addr)
		}
	}
	if len(a.m) >= maxAuthFailClients {
		clear(a.m)
	}
}
