package server

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/registryview"
	"github.com/tidemark-dev/tidemark/server/signin"
)

// groupStorage is zitadel's example OpenID provider storage with a
// groups claim (and an email) in the ID tokens it issues.
type groupStorage struct {
	*storage.Storage
	groups map[string][]string
	emails map[string]string
	// unverified are subjects whose email the provider does not vouch for.
	mu         sync.Mutex
	unverified map[string]bool
}

func (g *groupStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := g.Storage.SetUserinfoFromRequest(ctx, ui, req, scopes); err != nil {
		return err
	}
	ui.AppendClaims("groups", g.groups[req.GetSubject()])
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.emails[req.GetSubject()]; e != "" {
		ui.Email = e
		ui.EmailVerified = oidc.Bool(!g.unverified[req.GetSubject()])
	}
	return nil
}

// setEmail makes the provider say sub's email is email, verified or not.
func (g *groupStorage) setEmail(sub, email string, verified bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.emails[sub] = email
	g.unverified[sub] = !verified
}

// oidcProvider is a real OpenID provider (zitadel/oidc's example OP) on
// loopback, with two users: test-user (groups release-engineers) and
// test-user2 (viewers).
type oidcProvider struct {
	issuer string
	ts     *httptest.Server
	users  *groupStorage
}

func startOIDCProvider(t *testing.T, callback string) *oidcProvider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String() + "/"
	// The example keeps its clients in a package variable, read by
	// NewStorage: register ours, with this test's callback, first.
	storage.RegisterClients(
		storage.WebClient("tidemark", "s3cret", callback),
		storage.WebClient("other-app", "other", callback),
	)
	st := &groupStorage{Storage: storage.NewStorage(storage.NewUserStore(issuer)),
		groups: map[string][]string{"id1": {"release-engineers", "everyone"}, "id2": {"viewers"}},
		emails: map[string]string{"id1": "release.engineer@example.com"}, unverified: map[string]bool{}}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	router := exampleop.SetupServer(issuer, st, logger, false)
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ts := httptest.NewUnstartedServer(router)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return &oidcProvider{issuer: issuer, ts: ts, users: st}
}

// login signs user in at the provider in a browser-like client (cookies,
// redirects followed), starting from start; it answers the last response.
func (p *oidcProvider) login(t *testing.T, client *http.Client, start, user string) (*http.Response, string) {
	t.Helper()
	res, err := client.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no login form at %s (%d):\n%.500s", res.Request.URL, res.StatusCode, body)
	}
	res, err = client.PostForm(p.issuer+"login/username", url.Values{"username": {user}, "password": {"verysecure"}, "id": {string(m[1])}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(body)
}

// idToken is an ID token for user from the provider, as any client of
// clientID gets one (authorization code with PKCE).
func (p *oidcProvider) idToken(t *testing.T, clientID, secret, redirect, user string) string {
	t.Helper()
	oc := &oauth2.Config{ClientID: clientID, ClientSecret: secret, RedirectURL: redirect, Scopes: []string{"openid", "email"},
		Endpoint: oauth2.Endpoint{AuthURL: p.issuer + "auth", TokenURL: p.issuer + "oauth/token"}}
	verifier := oauth2.GenerateVerifier()
	jar, _ := cookiejar.New(nil)
	var code string
	client := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirect) {
			code = req.URL.Query().Get("code")
			return http.ErrUseLastResponse
		}
		return nil
	}}
	p.login(t, client, oc.AuthCodeURL("s", oauth2.S256ChallengeOption(verifier)), user)
	if code == "" {
		t.Fatal("no code from the provider")
	}
	tok, err := oc.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	return raw
}

// signInEnv is a server on Postgres with sign-in through a real provider.
type signInEnv struct {
	*pgEnv
	op   *oidcProvider
	base string
	srv  *Server
	logs *testutil.LockedBuffer
}

func startSignIn(t *testing.T, now func() time.Time) *signInEnv {
	t.Helper()
	return startSignInWith(t, func(c *signin.Config) { c.Now = now })
}

// startSignInWith is startSignIn with the sign-in configuration edited.
func startSignInWith(t *testing.T, edit func(*signin.Config)) *signInEnv {
	t.Helper()
	return startSignInChannels(t, edit, k3sChannels())
}

// startSignInChannels is startSignInWith serving chs, with governance.
func startSignInChannels(t *testing.T, edit func(*signin.Config), chs []catalog.Channel) *signInEnv {
	t.Helper()
	env := newPGEnv(t, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	p := startOIDCProvider(t, base+"/ui/callback")
	sc := signin.Config{Issuer: p.issuer, ClientID: "tidemark", ClientSecret: func() (string, error) { return "s3cret", nil },
		ExternalURL: base, Roles: []signin.Role{
			{Group: "release-engineers", Scope: ScopePromote, Channels: []string{"v1.*"}},
			{Group: "viewers", Scope: ScopeRead},
			// A read role without channels must not lift the promote
			// role's channel limit.
			{Group: "everyone", Scope: ScopeRead},
		}}
	logs := &testutil.LockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	sc.Log = log
	sc.Sessions = env.st
	edit(&sc)
	si := signin.New(sc)
	srv, err := New(Options{Log: log, Store: env.st, Data: env.st, Sources: []catalog.Source{env.src},
		Channels: chs, SignIn: si, WriteRate: 1000, WriteBurst: 1000, Governance: env.st,
		RegistryView: registryview.Options{Auth: "token"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(validating(t, srv.Handler()))
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	t.Cleanup(ts.Close)
	return &signInEnv{pgEnv: env, op: p, base: base, srv: srv, logs: logs}
}

// logout posts /ui/logout from client with header pairs hdr and answers
// the status it ends on (redirects followed: 200 from the console).
func logout(t *testing.T, client *http.Client, base string, hdr ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/ui/logout", nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func browserClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

// TestSignInWithARealProvider: the console's flow through a real OpenID
// provider signs a person in (state, nonce, PKCE); the session writes
// only with the console's header; the audit names the person; a replayed
// state signs nobody in; sign-out ends it; a person whose groups give no
// promote is refused.
func TestSignInWithARealProvider(t *testing.T) {
	e := startSignIn(t, nil)
	client := browserClient()
	res, body := e.op.login(t, client, e.base+"/ui/login?back=/ui/channels/v1.33", "test-user@127.0.0.1")
	if res.StatusCode != 200 || res.Request.URL.Path != "/ui/channels/v1.33" || !strings.Contains(body, "release.engineer@example.com") {
		t.Fatalf("after sign-in: %d at %s:\n%.800s", res.StatusCode, res.Request.URL, body)
	}
	u, _ := url.Parse(e.base)
	var session *http.Cookie
	for _, c := range client.Jar.Cookies(u) {
		if c.Name == signin.SessionCookie {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}
	write := func(hdr ...string) int {
		req, _ := http.NewRequest(http.MethodPut, e.base+"/api/v1/channels/v1.33/pin", strings.NewReader(`{"version":"v1.33.5+k3s1","reason":"signed in"}`))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := write(); code != http.StatusUnauthorized {
		t.Errorf("a session cookie without the console's header wrote: %d, want 401", code)
	}
	if code := write(core.ConsoleHeader, "1"); code != 200 {
		t.Fatalf("a signed-in write: %d", code)
	}
	events, _ := e.st.History(context.Background(), "v1.33")
	if len(events) == 0 || events[0].Actor != "release.engineer@example.com" {
		t.Errorf("audit actor: %+v, want the person's email", events)
	}
	// The role's channels: v1.* only.
	req, _ := http.NewRequest(http.MethodPut, e.base+"/api/v1/channels/stable/pin", strings.NewReader(`{"version":"v1.33.5+k3s1"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(core.ConsoleHeader, "1")
	if res, err := client.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a write outside the role's channels: %v %v, want 403", res.StatusCode, err)
	}

	// A replayed callback (the same state and code) signs nobody in.
	var callback string
	replay := browserClient()
	replay.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/ui/callback" {
			callback = req.URL.String()
		}
		return nil
	}
	e.op.login(t, replay, e.base+"/ui/login", "test-user@127.0.0.1")
	if callback == "" {
		t.Fatal("no callback seen")
	}
	fresh := browserClient()
	res, err := fresh.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a replayed callback: %d, want 401", res.StatusCode)
	}
	for _, c := range fresh.Jar.Cookies(u) {
		if c.Name == signin.SessionCookie && c.Value != "" {
			t.Errorf("a replayed callback set a session")
		}
	}

	// A sign-out whose body is over 64 KiB is 413 naming the limit, and
	// the session goes on.
	big, _ := http.NewRequest(http.MethodPost, e.base+"/ui/logout", strings.NewReader(strings.Repeat("x", core.MaxWriteBody+1)))
	big.Header.Set("Origin", e.base)
	res, err = client.Do(big)
	if err != nil {
		t.Fatal(err)
	}
	refused, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(refused), "65536") {
		t.Errorf("a sign-out with a body over 64 KiB: %d %.200s, want 413 naming 65536", res.StatusCode, refused)
	}
	if code := write(core.ConsoleHeader, "1"); code != 200 {
		t.Errorf("a write after a refused sign-out: %d, want 200", code)
	}

	// Sign out, as the console's form does (a browser sends its Origin).
	if code := logout(t, client, e.base, "Origin", e.base); code != http.StatusOK {
		t.Fatalf("sign-out: %d", code)
	}
	if code := write(core.ConsoleHeader, "1"); code != http.StatusUnauthorized {
		t.Errorf("a write after sign-out: %d, want 401", code)
	}

	// A viewer may read the fleet but not pin; the page offers no pin form.
	viewer := browserClient()
	_, page := e.op.login(t, viewer, e.base+"/ui/login?back=/ui/channels/v1.33", "test-user2")
	if !strings.Contains(page, `id="no-writes"`) || strings.Contains(page, `id="pin-form"`) {
		t.Errorf("a viewer's channel page offers writes")
	}
	res, err = viewer.Get(e.base + "/ui/sources/k3s")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(src), `id="block-form"`) {
		t.Errorf("a viewer's source page offers blocking")
	}
}

// TestIDTokensAsBearerTokens: the provider's ID tokens work as bearer
// tokens (the person is the actor); expired, wrong-audience, unsigned and
// tampered tokens are 401 with one line in the log, never the token; a
// provider that is down costs sign-ins, never channel answers.
func TestIDTokensAsBearerTokens(t *testing.T) {
	e := startSignIn(t, nil)
	tok := e.op.idToken(t, "tidemark", "s3cret", e.base+"/ui/callback", "test-user@127.0.0.1")
	res, body := send(t, http.MethodPut, e.base+"/api/v1/channels/v1.33/pin", tok, `{"version":"v1.33.5+k3s1","reason":"bearer"}`)
	if res.StatusCode != 200 {
		t.Fatalf("pin with an ID token: %d %s", res.StatusCode, body)
	}
	events, _ := e.st.History(context.Background(), "v1.33")
	if events[0].Actor != "release.engineer@example.com" {
		t.Errorf("actor %q", events[0].Actor)
	}
	other := e.op.idToken(t, "other-app", "other", e.base+"/ui/callback", "test-user@127.0.0.1")
	parts := strings.Split(tok, ".")
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	unsigned := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(header), `"RS256"`, `"none"`, 1))) + "." + parts[1] + "."
	sig := []byte(parts[2])
	sig[10] ^= 1
	if sig[10] == '.' {
		sig[10] = 'A'
	}
	tampered := parts[0] + "." + parts[1] + "." + string(sig)
	// Another provider, same client id: the wrong issuer.
	elsewhere := startOIDCProvider(t, e.base+"/ui/callback")
	foreign := elsewhere.idToken(t, "tidemark", "s3cret", e.base+"/ui/callback", "test-user@127.0.0.1")
	for name, bad := range map[string]string{"wrong audience": other, "unsigned (alg none)": unsigned, "tampered": tampered, "wrong issuer": foreign} {
		res, _ := send(t, http.MethodPut, e.base+"/api/v1/channels/v1.33/pin", bad, `{"version":"v1.33.6+k3s2"}`)
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, res.StatusCode)
		}
	}
	if logs := e.logs.String(); !strings.Contains(logs, "bearer ID token refused") || strings.Contains(logs, parts[2]) {
		t.Errorf("log: want a line per refusal and never a token:\n%s", logs)
	}

	// Expired: the same token two hours later.
	later := startSignIn(t, func() time.Time { return time.Now().Add(2 * time.Hour) })
	fresh := later.op.idToken(t, "tidemark", "s3cret", later.base+"/ui/callback", "test-user@127.0.0.1")
	if res, body := send(t, http.MethodPut, later.base+"/api/v1/channels/v1.33/pin", fresh, `{"version":"v1.33.5+k3s1"}`); res.StatusCode != 401 || !strings.Contains(string(body), "expired") {
		t.Errorf("an expired ID token: %d %s", res.StatusCode, body)
	}

	// The provider goes away: channel URLs answer; a sign-in says why not.
	e2 := startSignIn(t, nil)
	e2.op.ts.Close()
	if res, _ := send(t, http.MethodGet, e2.base+"/v1-release/channels/v1.33", "", ""); res.StatusCode != http.StatusFound {
		t.Errorf("channel URL with the provider down: %d", res.StatusCode)
	}
	if res, body := send(t, http.MethodGet, e2.base+"/ui/login", "", ""); res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "OpenID provider") {
		t.Errorf("sign-in with the provider down: %d %.300s", res.StatusCode, body)
	}
}

// TestSessionRefresh: the session cookie is encrypted (it holds the
// refresh token); past its refresh time it asks the provider again and
// carries on; when the provider refuses (here: is gone), the person is
// signed out, with a log line.
func TestSessionRefresh(t *testing.T) {
	e := startSignInWith(t, func(c *signin.Config) { c.Refresh = time.Second })
	client := browserClient()
	if _, body := e.op.login(t, client, e.base+"/ui/login?back=/ui/", "test-user@127.0.0.1"); !strings.Contains(body, "release.engineer@example.com") {
		t.Fatalf("not signed in:\n%.500s", body)
	}
	u, _ := url.Parse(e.base)
	cookie := func() string {
		for _, c := range client.Jar.Cookies(u) {
			if c.Name == signin.SessionCookie {
				return c.Value
			}
		}
		return ""
	}
	first := cookie()
	if raw, _ := base64.RawURLEncoding.DecodeString(first); first == "" || strings.Contains(string(raw), "release.engineer") {
		t.Fatalf("the session cookie is readable (or missing): %q", first)
	}
	time.Sleep(1200 * time.Millisecond)
	res, err := client.Get(e.base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	// The session is renewed in Postgres; its cookie stays the same.
	if !strings.Contains(string(body), "release.engineer@example.com") || cookie() != first {
		t.Errorf("after the refresh time: still signed in %v, cookie kept %v", strings.Contains(string(body), "release.engineer"), cookie() == first)
	}
	e.op.ts.Close()
	time.Sleep(1200 * time.Millisecond)
	res, err = client.Get(e.base + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if strings.Contains(string(body), "release.engineer@example.com") || !strings.Contains(e.logs.String(), "session refresh refused") {
		t.Errorf("a refused refresh kept the session")
	}
}

// TestSignInSurvivesALoginFlood: 10,001 sign-ins started and abandoned
// (the bound on those in progress, and one past it) do not lock a person
// out: the oldest make room, and a real sign-in completes.
func TestSignInSurvivesALoginFlood(t *testing.T) {
	e := startSignIn(t, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	flood := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var wg sync.WaitGroup
	work := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for range work {
				res, err := flood.Get(e.base + "/ui/login")
				if err != nil {
					t.Error(err)
					return
				}
				res.Body.Close()
				if res.StatusCode != http.StatusFound {
					t.Errorf("login %d", res.StatusCode)
				}
			}
		})
	}
	for range 10_001 {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	if _, body := e.op.login(t, browserClient(), e.base+"/ui/login?back=/ui/", "test-user@127.0.0.1"); !strings.Contains(body, "release.engineer@example.com") {
		t.Errorf("after a flood of abandoned sign-ins, a person cannot sign in:\n%.300s", body)
	}
}
