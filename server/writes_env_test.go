package server

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/internal/testutil"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// pgEnv is a server over a real Postgres database holding the k3s tags of
// fixture_test.go, with one token per scope.
type pgEnv struct {
	t      *testing.T
	url    string
	st     *store.Store
	src    catalog.Source
	srv    *Server
	ts     *httptest.Server
	logs   *testutil.LockedBuffer
	tokens map[string]string // token name -> plaintext
}

// tagDigest is the digest every k3s tag gets in the database.
func tagDigest(tag string) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("image "+tag)))
}

// newPGEnv migrates a fresh database, indexes the k3s tags into it and
// starts a server on it. Writes are not rate limited unless opts says so.
func newPGEnv(t *testing.T, opts Options) *pgEnv {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		t.Fatal("set DATABASE_URL or run via make test")
	}
	ctx := context.Background()
	env := &pgEnv{t: t, url: storetest.URL(t), tokens: map[string]string{}}
	env.st = openStore(t, env.url)
	env.src = semverSource(t, "k3s", "docker.io/rancher/k3s-upgrade")
	if err := env.st.SyncSources(ctx, []catalog.Source{env.src}); err != nil {
		t.Fatalf("SyncSources: %v", err)
	}
	var tags []resolver.Tag
	digests := map[string]string{}
	for _, name := range k3sTags() {
		tags = append(tags, env.src.Classify(name))
		digests[name] = tagDigest(name)
	}
	if _, err := env.st.ApplyScan(ctx, resolver.ScanResult{Source: "k3s", Complete: true, Tags: tags}); err != nil {
		t.Fatalf("ApplyScan: %v", err)
	}
	if err := env.st.SetDigests(ctx, "k3s", digests); err != nil {
		t.Fatalf("SetDigests: %v", err)
	}
	for name, scopes := range map[string][]string{"ci-promote": {ScopePromote}, "scanner": {ScopeScan}, "root": {ScopeAdmin}} {
		tok, err := env.st.CreateToken(ctx, name, scopes)
		if err != nil {
			t.Fatalf("CreateToken %s: %v", name, err)
		}
		env.tokens[name] = tok
	}
	env.srv, env.ts, env.logs = env.serve(env.st, opts)
	return env
}

func openStore(t *testing.T, url string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// serve starts another server (a replica) on st, loading from st.
func (env *pgEnv) serve(st *store.Store, opts Options) (*Server, *httptest.Server, *testutil.LockedBuffer) {
	t := env.t
	t.Helper()
	opts.Store = st
	if opts.Load == nil && opts.Data == nil {
		// As cmd/tidemark serve does: a change reads only what it touched.
		opts.Data, opts.Sources, opts.Channels = st, []catalog.Source{env.src}, k3sChannels()
	}
	if opts.WriteRate == 0 {
		opts.WriteRate, opts.WriteBurst = 1000, 1000
	}
	return startServer(t, opts)
}

// loadFrom builds whole snapshots from st, for tests that replace Load.
func loadFrom(st *store.Store, src catalog.Source) func(context.Context) (*snapshot.Snapshot, error) {
	return func(ctx context.Context) (*snapshot.Snapshot, error) {
		data, states, err := st.Load(ctx, []catalog.Source{src})
		if err != nil {
			return nil, err
		}
		return snapshot.New(k3sChannels(), data, states, time.Now()), nil
	}
}

// do sends a request as token (a name from env.tokens, a raw "Bearer ..."
// header value when it has a space, or "" for none).
func do(t *testing.T, env *pgEnv, ts *httptest.Server, method, path, token, body string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	if token != "" && !strings.Contains(token, " ") {
		tok, ok := env.tokens[token]
		if !ok {
			t.Fatalf("no token named %q", token)
		}
		token = tok
	}
	return send(t, method, ts.URL+path, token, body, hdr...)
}

// channel reads a channel object and its ETag from ts.
func channel(t *testing.T, ts *httptest.Server, name string) (openapi.Channel, string) {
	t.Helper()
	res, body := get(t, ts, "/api/v1/channels/"+name)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET channel %s: %d %s", name, res.StatusCode, body)
	}
	var ch openapi.Channel
	if err := json.Unmarshal(body, &ch); err != nil {
		t.Fatalf("channel %s: %v", name, err)
	}
	return ch, res.Header.Get("ETag")
}

// auditCount is every audit event, whatever it is about: the proof that a
// refused write left no trace reads this before and after.
func (env *pgEnv) auditCount() int {
	env.t.Helper()
	n := 0
	for _, ch := range k3sChannels() {
		ev, err := env.st.History(context.Background(), ch.Name)
		if err != nil {
			env.t.Fatalf("History: %v", err)
		}
		n += len(ev)
	}
	ev, err := env.st.SourceHistory(context.Background(), "k3s")
	if err != nil {
		env.t.Fatalf("SourceHistory: %v", err)
	}
	return n + len(ev)
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
