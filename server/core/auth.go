package core

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core/authfail"
	"github.com/tidemark-dev/tidemark/server/signin"
)

// Scopes a token may carry. admin implies every other one.
const (
	ScopePromote = "promote"
	ScopeScan    = "scan"
	ScopeAdmin   = "admin"
	// ScopeRead reads what needs a token: the fleet, whose cluster IDs are
	// customer data.
	ScopeRead = "read"
)

// Default write rate per token: a person or a pipeline promotes a handful
// of channels at a time; a loop gone wrong should not rewrite the audit
// log thousands of times a second.
const (
	defaultWriteRate  = 5
	defaultWriteBurst = 10
)

// ErrRateLimited is the server's own addition to the taxonomy (429): the
// write and credential limits produce it, and a PushFunc whose queue is
// full returns it; it does not belong in resolver.
var ErrRateLimited = errors.New("rate limited")

// ActorKey is where the auth middleware leaves the token's name for the
// handler (the audit actor); principalKey the whole principal.
const (
	ActorKey     = "tidemark.actor"
	principalKey = "tidemark.principal"
)

// What a write touches, for a principal limited to some channels (token
// create --channels): one channel (named by the route's :name), a whole
// source, or channels the handler checks itself (Alertmanager's alerts).
type writeReach int

const (
	ReachSource writeReach = iota
	ReachChannel
	ReachHandler
)

// Allows reports whether a token with scopes may do what needs.
func Allows(scopes []string, need string) bool {
	if slices.Contains(scopes, ScopeAdmin) || slices.Contains(scopes, need) {
		return true
	}
	// Someone trusted to move channels may also ask for a fresh index, and
	// read the fleet they move.
	return (need == ScopeScan || need == ScopeRead) && slices.Contains(scopes, ScopePromote)
}

// Enough names every scope allows accepts for need, for a 403 to tell the
// caller, so nobody mints a token of a scope they already hold in promote.
func Enough(need string) string {
	switch need {
	case ScopeScan, ScopeRead:
		return need + ", " + ScopePromote + " or " + ScopeAdmin
	case ScopeAdmin:
		return ScopeAdmin
	}
	return need + " or " + ScopeAdmin
}

// RequireScope authenticates the bearer token, rate-limits per token and
// checks the scope, in that order: the limiter needs the token's name, and
// a 403 still costs the caller budget so probing scopes is not free.
// The token itself is never logged or echoed; errors name the token only by
// the name it was created with. A token limited to channels may make no
// source-wide write (block, scan).
func (s *Server) RequireScope(need string) echo.MiddlewareFunc {
	return s.Authorize(need, true, ReachSource)
}

// RequireChannelScope is requireScope for a write to the route's channel
// (:name): a token limited to channels must match it.
func (s *Server) RequireChannelScope(need string) echo.MiddlewareFunc {
	return s.Authorize(need, true, ReachChannel)
}

// RequireRead is requireScope for reads: the per-token budget is for
// writes, and a console or a script paging the fleet reads many times.
func (s *Server) RequireRead() echo.MiddlewareFunc {
	return s.Authorize(ScopeRead, false, ReachHandler)
}

func (s *Server) Authorize(need string, limited bool, reach writeReach) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, err := s.Authenticate(c, false)
			if err != nil {
				return err
			}
			if limited {
				if wait, ok := s.limits.allow(p.Name); !ok {
					c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
					return fmt.Errorf("%w: token %q: more than %g writes per second; retry in %ds", ErrRateLimited, p.Name, float64(s.limits.rate), wait)
				}
			}
			if !Allows(p.Scopes, need) {
				return fmt.Errorf("%w: token %q has scopes [%s]; this needs %s", resolver.ErrScope, p.Name, strings.Join(p.Scopes, ","), Enough(need))
			}
			if err := MayReach(p, reach, c.Param("name")); err != nil {
				return err
			}
			c.Set(ActorKey, p.Name)
			c.Set(principalKey, p)
			return next(c)
		}
	}
}

// MayReach checks a channel-limited principal against what a write touches.
func MayReach(p resolver.Principal, reach writeReach, channel string) error {
	if !p.Limited() {
		return nil
	}
	switch reach {
	case ReachSource:
		return fmt.Errorf("%w: %q is limited to channels [%s]; source-wide writes (block, risks, scan) need a token without --channels",
			resolver.ErrScope, p.Name, strings.Join(p.Channels, ","))
	case ReachChannel:
		if !p.MayWriteChannel(channel) {
			return fmt.Errorf("%w: %q is limited to channels [%s]; channel %q is not one of them",
				resolver.ErrScope, p.Name, strings.Join(p.Channels, ","), channel)
		}
	}
	return nil
}

// ViewAuthenticate checks a registry view credential: a token of any
// scope reads, as every scope includes reading; so does the provider's ID
// token of a person whose roles give any scope (the same roles as the
// API). Refused credentials count against the client's address like any
// other.
func (s *Server) ViewAuthenticate(c echo.Context, token string) error {
	if s.Opts.Store == nil {
		return s.WriteUnavailable(c)
	}
	var err error
	if s.Opts.SignIn != nil && signin.LooksLikeJWT(token) {
		var p resolver.Principal
		if p, err = s.Opts.SignIn.Bearer(c.Request().Context(), token); err == nil && len(p.Scopes) == 0 {
			err = fmt.Errorf("%w: %s signed in, but no role gives a scope; reading the registry view needs read", resolver.ErrForbidden, p.Name)
		}
		if err != nil {
			s.Log.Info("registry view ID token refused", "reason", err, "client", s.ClientAddr(c.Request()))
		}
	} else {
		_, err = s.Opts.Store.Authenticate(c.Request().Context(), token)
	}
	return s.CredentialFailed(c, err)
}

// Principal is the request's authenticated principal (after authorize).
func Principal(c echo.Context) resolver.Principal {
	p, _ := c.Get(principalKey).(resolver.Principal)
	return p
}

// Authenticate finds the request's token in the store, and counts a
// failure against the client's address (refusing it while that address
// has failed too often). queryToken also accepts ?access_token= (RFC 6750),
// for webhook senders that cannot set a header.
func (s *Server) Authenticate(c echo.Context, queryToken bool) (resolver.Principal, error) {
	if s.Opts.Store == nil {
		return resolver.Principal{}, s.WriteUnavailable(c)
	}
	secret, err := bearer(c.Request())
	if q := c.QueryParam("access_token"); err != nil && queryToken && q != "" {
		secret, err = q, nil
	}
	if err != nil && c.Request().Header.Get("Authorization") == "" {
		if p, ok := s.sessionPrincipal(c); ok {
			return p, nil
		}
	}
	var p resolver.Principal
	switch {
	case err != nil:
	case s.Opts.SignIn != nil && signin.LooksLikeJWT(secret):
		// A person's ID token from the provider (CONTRACT section 15).
		if p, err = s.Opts.SignIn.Bearer(c.Request().Context(), secret); err != nil {
			s.Log.Info("bearer ID token refused", "reason", err, "client", s.ClientAddr(c.Request()))
		}
	default:
		p, err = s.Opts.Store.Authenticate(c.Request().Context(), secret)
	}
	return p, s.CredentialFailed(c, err) // the store's error already says "authenticate"
}

// CredentialFailed counts err against the client's address when it is a
// refused credential, and turns it into a 429 once that address is past
// its limit; any other err passes through.
func (s *Server) CredentialFailed(c echo.Context, err error) error {
	if !errors.Is(err, resolver.ErrUnauthorized) && !errors.Is(err, resolver.ErrForbidden) {
		return err
	}
	addr := s.ClientAddr(c.Request())
	if wait, locked := s.authFails.Failed(addr); locked {
		c.Response().Header().Set("Retry-After", strconv.Itoa(wait))
		return fmt.Errorf("%w: too many failed authentications from %s; retry in %ds", ErrRateLimited, addr, wait)
	}
	return err
}

// bearer extracts the token from Authorization: Bearer <token>.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", fmt.Errorf("%w: no token: send Authorization: Bearer <token>", resolver.ErrUnauthorized)
	}
	scheme, tok, ok := strings.Cut(h, " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", fmt.Errorf("%w: Authorization is not \"Bearer <token>\"", resolver.ErrUnauthorized)
	}
	return tok, nil
}

func Actor(c echo.Context) string {
	a, _ := c.Get(ActorKey).(string)
	return a
}

// limiters is one token bucket per token name. Token names are few (people
// and pipelines), so the map is never pruned.
type limiters struct {
	rate  rate.Limit
	burst int
	mu    sync.Mutex
	m     map[string]*rate.Limiter
}

func newLimiters(r float64, burst int) *limiters {
	if r <= 0 {
		r = defaultWriteRate
	}
	if burst <= 0 {
		burst = defaultWriteBurst
	}
	return &limiters{rate: rate.Limit(r), burst: burst, m: make(map[string]*rate.Limiter)}
}

// allow takes one write from name's bucket; when empty it says how many
// whole seconds to wait (at least 1, for Retry-After).
func (l *limiters) allow(name string) (int, bool) {
	l.mu.Lock()
	lim, ok := l.m[name]
	if !ok {
		lim = rate.NewLimiter(l.rate, l.burst)
		l.m[name] = lim
	}
	l.mu.Unlock()
	now := time.Now()
	r := lim.ReserveN(now, 1)
	d := r.DelayFrom(now)
	if d == 0 {
		return 0, true
	}
	r.CancelAt(now)
	return max(1, int(math.Ceil(d.Seconds()))), false
}

// ConsoleHeader marks a write the console's own script sends with a
// session cookie: another site's form cannot set a header, so a cookie
// alone never writes (CSRF).
const ConsoleHeader = "X-Tidemark-Console"

// sessionPrincipal is the person signed in on the request's session
// cookie, for a read, or a write that is not cross-site (SameSite).
func (s *Server) sessionPrincipal(c echo.Context) (resolver.Principal, bool) {
	if s.Opts.SignIn == nil {
		return resolver.Principal{}, false
	}
	r := c.Request()
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !SameSite(r, s.Opts.ExternalURL) {
		return resolver.Principal{}, false
	}
	return s.Opts.SignIn.Session(c.Response(), r)
}

// SameSite reports whether a write with a session cookie may be trusted
// as the console's own (CSRF): it carries ConsoleHeader (another site's
// form cannot set a header), or says it comes from this origin
// (Sec-Fetch-Site: same-origin, or an Origin equal to external_url or,
// without one, to the request's own host). A request that says neither is
// refused.
func SameSite(r *http.Request, externalURL string) bool {
	if r.Header.Get(ConsoleHeader) == "1" {
		return true
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return false
	}
	if externalURL != "" {
		return strings.EqualFold(strings.TrimRight(externalURL, "/"), origin)
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// AuthFailLimit is how many failed credentials an address may send a
// minute (server/core/authfail).
const AuthFailLimit = authfail.Limit
