package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/signin"
)

// replica is another server on e's database with its own SignIn (as
// another process has), answering at its own address.
func (e *signInEnv) replica(t *testing.T) string {
	t.Helper()
	sc := signin.Config{Issuer: e.op.issuer, ClientID: "tidemark", ClientSecret: func() (string, error) { return "s3cret", nil },
		ExternalURL: e.base, Roles: []signin.Role{{Group: "release-engineers", Scope: ScopePromote}}, Sessions: e.st}
	srv, err := New(Options{Store: e.st, Data: e.st, Sources: []catalog.Source{e.src}, Channels: k3sChannels(), SignIn: signin.New(sc)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(validating(t, srv.Handler()))
	t.Cleanup(ts.Close)
	return ts.URL
}

func sessionCookie(t *testing.T, client *http.Client, base string) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(base)
	for _, c := range client.Jar.Cookies(u) {
		if c.Name == signin.SessionCookie {
			return c
		}
	}
	t.Fatal("no session cookie")
	return nil
}

// withCookie asks path on base with only the session cookie c (a copy of
// it, as a thief would hold), a console write's header when write.
func withCookie(t *testing.T, base, path string, c *http.Cookie, write bool) int {
	t.Helper()
	method, body := http.MethodGet, ""
	if write {
		method, body = http.MethodPut, `{"version":"v1.33.5+k3s1","reason":"copy"}`
	}
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	if write {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(core.ConsoleHeader, "1")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestLogoutEndsTheSessionOnEveryReplica: a copy of a session cookie works
// on a second replica (one key, in Postgres); after a logout on the first
// the copy is 401 on both at once. A logout from another site is 403 and
// ends nothing.
func TestLogoutEndsTheSessionOnEveryReplica(t *testing.T) {
	e := startSignIn(t, nil)
	other := e.replica(t)
	client := browserClient()
	if _, body := e.op.login(t, client, e.base+"/ui/login?back=/ui/", "test-user@127.0.0.1"); !strings.Contains(body, "release.engineer@example.com") {
		t.Fatalf("not signed in:\n%.300s", body)
	}
	stolen := sessionCookie(t, client, e.base)
	const read = "/api/v1/fleet?channel=v1.33"
	if code := withCookie(t, other, read, stolen, false); code == http.StatusUnauthorized {
		t.Fatalf("the session on another replica: %d, want it known there", code)
	}
	for _, hdr := range [][]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}, nil} {
		if code := logout(t, client, e.base, hdr...); code != http.StatusForbidden {
			t.Errorf("a logout with %v: %d, want 403", hdr, code)
		}
	}
	if code := withCookie(t, other, "/api/v1/channels/v1.33/pin", stolen, true); code != http.StatusOK {
		t.Fatalf("after refused logouts the session should still write: %d", code)
	}
	if code := logout(t, client, e.base, core.ConsoleHeader, "1"); code != http.StatusOK {
		t.Fatalf("logout: %d", code)
	}
	for _, base := range []string{e.base, other} {
		if code := withCookie(t, base, "/api/v1/channels/v1.33/pin", stolen, true); code != http.StatusUnauthorized {
			t.Errorf("a copied cookie after logout, on %s: %d, want 401", base, code)
		}
	}
}

// TestSessionsEndWhenIdleOrOld: a session idle for an hour, or 8 hours
// after sign-in, is 401.
func TestSessionsEndWhenIdleOrOld(t *testing.T) {
	e := startSignIn(t, nil)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, c := range []struct{ what, set string }{
		{"idle for an hour", "last_seen = now() - interval '61 minutes'"},
		{"8 hours after sign-in", "expires_at = now() - interval '1 second'"},
	} {
		client := browserClient()
		e.op.login(t, client, e.base+"/ui/login?back=/ui/", "test-user@127.0.0.1")
		cookie := sessionCookie(t, client, e.base)
		if code := withCookie(t, e.base, "/api/v1/channels/v1.33/pin", cookie, true); code != http.StatusOK {
			t.Fatalf("%s: a fresh session: %d", c.what, code)
		}
		if _, err := conn.Exec(ctx, "update console_sessions set "+c.set); err != nil {
			t.Fatal(err)
		}
		if code := withCookie(t, e.base, "/api/v1/channels/v1.33/pin", cookie, true); code != http.StatusUnauthorized {
			t.Errorf("a session %s: %d, want 401", c.what, code)
		}
	}
}

// TestASessionCannotBeForgedFromTheConfiguration: the old cookie key was
// derived from the client secret and public values; a cookie sealed that
// way (with an empty secret, or the real one) names nobody now.
func TestASessionCannotBeForgedFromTheConfiguration(t *testing.T) {
	e := startSignIn(t, nil)
	for _, secret := range []string{"", "s3cret"} {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte("tidemark session v2 " + e.op.issuer + " tidemark"))
		block, _ := aes.NewCipher(m.Sum(nil))
		g, _ := cipher.NewGCM(block)
		nonce := make([]byte, g.NonceSize())
		_, _ = rand.Read(nonce)
		claims, _ := json.Marshal(map[string]any{"n": "mallory", "s": []string{"admin"}, "e": time.Now().Add(time.Hour).Unix(), "h": time.Now().Add(time.Hour).Unix()})
		forged := &http.Cookie{Name: signin.SessionCookie, Value: base64.RawURLEncoding.EncodeToString(g.Seal(nonce, nonce, claims, []byte(signin.SessionCookie)))}
		if code := withCookie(t, e.base, "/api/v1/channels/v1.33/pin", forged, true); code != http.StatusUnauthorized {
			t.Errorf("a cookie sealed with a key derived from secret %q: %d, want 401", secret, code)
		}
	}
}

// TestPeopleAreTheirSubject: the audit shows an email only when the
// provider says it is verified; one person approves once whatever email
// they come with; a Tidemark token may request but not approve.
func TestPeopleAreTheirSubject(t *testing.T) {
	chs := k3sChannels()
	for i := range chs {
		if chs[i].Name == "v1.32" {
			chs[i].Approvals = 2
		}
	}
	e := startSignInChannels(t, func(*signin.Config) {}, chs)
	lead := e.op.idToken(t, "tidemark", "s3cret", e.base+"/ui/callback", "test-user@127.0.0.1")
	e.op.users.setEmail("id1", "someone.else@example.com", false)
	unverified := e.op.idToken(t, "tidemark", "s3cret", e.base+"/ui/callback", "test-user@127.0.0.1")
	res, body := send(t, http.MethodPut, e.base+"/api/v1/channels/v1.33/pin", unverified, `{"version":"v1.33.5+k3s1","reason":"who"}`)
	if res.StatusCode != 200 {
		t.Fatalf("pin: %d %s", res.StatusCode, body)
	}
	events, _ := e.st.History(context.Background(), "v1.33")
	if events[0].Actor != "id1" {
		t.Errorf("actor with an unverified email: %q, want the subject id1", events[0].Actor)
	}
	// A change needing approvals, requested by a token.
	ch := scheduleFor(t, e, e.tokens["ci-promote"])
	approve := func(tok string) (int, string) {
		res, body := send(t, http.MethodPost, e.base+fmt.Sprintf("/api/v1/changes/%d/approve", ch), tok, "")
		return res.StatusCode, string(body)
	}
	if code, body := approve(e.tokens["root"]); code != http.StatusForbidden || !strings.Contains(body, "urn:tidemark:problem:scope") {
		t.Errorf("a token's approval where people sign in: %d %s, want 403 scope", code, body)
	}
	if code, body := approve(lead); code != 200 {
		t.Fatalf("a person's approval: %d %s", code, body)
	}
	if code, body := approve(unverified); code != http.StatusConflict {
		t.Errorf("the same person under another email: %d %s, want 409 (one subject, one approval)", code, body)
	}
}

// scheduleFor requests a change of v1.32 (which needs two approvals) for
// later with tok, and answers its ID.
func scheduleFor(t *testing.T, e *signInEnv, tok string) int64 {
	t.Helper()
	at := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	res, body := send(t, http.MethodPost, e.base+"/api/v1/channels/v1.32/changes", tok,
		fmt.Sprintf(`{"action":"pin","version":"v1.32.5+k3s1","at":%q,"reason":"later"}`, at))
	if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusAccepted {
		t.Fatalf("schedule: %d %s", res.StatusCode, body)
	}
	var c struct{ ID int64 }
	_ = json.Unmarshal(body, &c)
	return c.ID
}

// TestTheRegistryViewTakesIDTokens: with auth: token, /v2/ takes the
// provider's ID token as a Bearer token and as the Basic password, for a
// person whose roles give a scope; a tampered one is 401.
func TestTheRegistryViewTakesIDTokens(t *testing.T) {
	e := startSignIn(t, nil)
	tok := e.op.idToken(t, "tidemark", "s3cret", e.base+"/ui/callback", "test-user@127.0.0.1")
	for _, auth := range []string{"Bearer " + tok, authHeader("ci", tok)} {
		if res, body := send(t, http.MethodGet, e.base+"/v2/", auth, ""); res.StatusCode != http.StatusOK {
			t.Errorf("/v2/ with an ID token as %s: %d %s, want 200", strings.Fields(auth)[0], res.StatusCode, body)
		}
	}
	bad := tok[:len(tok)-4] + "AAAA"
	if res, _ := send(t, http.MethodGet, e.base+"/v2/", "Bearer "+bad, ""); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v2/ with a tampered ID token: %d, want 401", res.StatusCode)
	}
}
