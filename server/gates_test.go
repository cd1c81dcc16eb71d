package server

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/indexer/gates"
	"github.com/tidemark-dev/tidemark/internal/cosigntest"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestReleaseGatesEndToEnd indexes a real in-process registry holding
// image indexes and cosign-format signatures into Postgres, and serves it:
// versions held by a gate are listed with why, skipped by channels and
// resolve, refused by pins naming the gate; arm64 and the signature
// arriving later release them on the next scan, and a soak ends on its own.
func TestReleaseGatesEndToEnd(t *testing.T) {
	repo, signer := signedRegistry(t)
	both := []string{"linux/amd64", "linux/arm64"}
	d1 := cosigntest.PushIndex(t, repo, "v1.33.1-k3s1", both...)
	signer.SignAndPush(t, repo, d1)
	signer.SignAndPush(t, repo, cosigntest.PushIndex(t, repo, "v1.33.2-k3s1", "linux/amd64"))
	d3 := cosigntest.PushIndex(t, repo, "v1.33.3-k3s1", both...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := openStore(t, storetest.URL(t))
	src := gatedSource(t, repo, signer, both)
	ix, err := indexer.New(indexer.Options{Store: st, Sources: []indexer.Source{{Source: src, Insecure: true, Exclude: regexpMust(`\.sig$`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		t.Fatal(err)
	}
	brief, hour := 4*time.Second, time.Hour
	channels := []catalog.Channel{
		{Name: "stable", Source: "k3s", Stream: resolver.Released},
		{Name: "aged", Source: "k3s", Stream: resolver.Released, Soak: &hour},
		{Name: "brief", Source: "k3s", Stream: resolver.Released, Soak: &brief},
	}
	tok, err := st.CreateToken(ctx, "rel", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Data: st, Store: st, Sources: []catalog.Source{src}, Channels: channels, WriteRate: 100, WriteBurst: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.ScanNow(ctx, "k3s"); err != nil {
		t.Fatal(err)
	}
	scanned := time.Now()
	if err := srv.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- runService(ctx, srv, ln, runOpts{}) }()
	defer func() { cancel(); <-done }()
	ts := httptest.NewServer(validating(t, srv.Handler()))
	defer ts.Close()

	get := func(path string, into any) int {
		t.Helper()
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if into != nil && res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(into); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode
	}
	served := func(ch string) string {
		t.Helper()
		tag, _ := sucResolve(t, ts.URL+"/v1-release/channels/"+ch)
		return tag
	}
	states := func() map[string]string {
		t.Helper()
		var vs []openapi.Version
		get("/api/v1/sources/k3s/versions", &vs)
		out := map[string]string{}
		for _, v := range vs {
			b, _ := json.Marshal(v.Gates)
			out[v.Version] = map[bool]string{true: "servable ", false: "held "}[v.Servable] + string(b)
		}
		return out
	}

	want := map[string]string{
		"v1.33.1+k3s1": `servable {"platforms":"ok","signature":"ok"}`,
		"v1.33.2+k3s1": `held {"platforms":"missing linux/arm64","signature":"ok"}`,
		"v1.33.3+k3s1": `held {"platforms":"ok","signature":"missing"}`,
	}
	for v, w := range want {
		if got := states()[v]; got != w {
			t.Errorf("version %s: %s, want %s", v, got, w)
		}
	}
	if got := served("stable"); got != "v1.33.1-k3s1" {
		t.Errorf("stable serves %q, want v1.33.1-k3s1 (the only servable version)", got)
	}
	var ans openapi.ResolveAnswer
	if code := get("/api/v1/resolve?channel=stable&current=v1.33.0-k3s1", &ans); code != 200 || ans.Target == nil || *ans.Target != "v1.33.1+k3s1" || len(ans.Available) != 1 {
		t.Errorf("resolve: %d %+v, want target v1.33.1+k3s1 alone", code, ans)
	}

	// The channel's own soak holds v1.33.1 (first indexed moments ago), then
	// releases it when the soak ends, with no change in the data.
	if got := served("brief"); got != "" && time.Since(scanned) < brief {
		t.Errorf("brief serves %q while its soak runs", got)
	}
	deadline := time.Now().Add(brief + 10*time.Second)
	for served("brief") != "v1.33.1-k3s1" {
		if time.Now().After(deadline) {
			t.Fatalf("brief still serves %q %v after its soak ended", served("brief"), time.Since(scanned)-brief)
		}
		time.Sleep(50 * time.Millisecond)
	}

	pin := func(ch, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, ts.URL+"/api/v1/channels/"+ch+"/pin", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, tc := range []struct {
		ch, body string
		code     int
		msg      string
	}{
		{"stable", `{"version":"v1.33.2+k3s1","reason":"r","force":true}`, 422, `held by release gate platforms (platforms missing linux/arm64); force overrides only \"soak\"`},
		{"stable", `{"version":"v1.33.3+k3s1","reason":"r"}`, 422, "held by release gate signature (signature missing)"},
		{"aged", `{"version":"v1.33.1+k3s1","reason":"r"}`, 422, "held by release gate soak (soak until "},
		{"aged", `{"version":"v1.33.1+k3s1","reason":"r","force":true}`, 200, ""},
	} {
		code, body := pin(tc.ch, tc.body)
		if code != tc.code || !strings.Contains(body, tc.msg) {
			t.Errorf("pin %s %s: %d %s, want %d with %q", tc.ch, tc.body, code, body, tc.code, tc.msg)
		}
	}
	if got := served("aged"); got != "v1.33.1-k3s1" {
		t.Errorf("aged, force-pinned through its soak, serves %q", got)
	}

	// arm64 arrives in v1.33.2's tag (signed), v1.33.3 gets its signature.
	signer.SignAndPush(t, repo, cosigntest.PushIndex(t, repo, "v1.33.2-k3s1", both...))
	signer.SignAndPush(t, repo, d3)
	ix2, err := indexer.New(indexer.Options{Store: st, OnChange: func(s string) { srv.Notify(snapshot.Change{Source: s}) },
		Sources: []indexer.Source{{Source: src, Insecure: true, Exclude: regexpMust(`\.sig$`)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix2.RecheckDigests(ctx, "k3s"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for served("stable") != "v1.33.3-k3s1" {
		if time.Now().After(deadline) {
			t.Fatalf("stable serves %q after the gates passed; versions: %v", served("stable"), states())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for v := range want {
		if got := states()[v]; got != `servable {"platforms":"ok","signature":"ok"}` {
			t.Errorf("after arm64 and the signature: %s is %s", v, got)
		}
	}
	res, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `tidemark_versions_held{gate="platforms",source="k3s"} 0`) {
		t.Errorf("metrics lack tidemark_versions_held for platforms at 0:\n%s", grepLines(string(b), "versions_held"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// signedRegistry is an in-process registry holding rancher/k3s-upgrade, and
// a cosign key to sign its images with.
func signedRegistry(t *testing.T) (name.Repository, *cosigntest.Signer) {
	t.Helper()
	regSrv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(regSrv.Close)
	repo, err := name.NewRepository(strings.TrimPrefix(regSrv.URL, "http://")+"/rancher/k3s-upgrade", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return repo, cosigntest.NewSigner(t)
}

// gatedSource is source k3s of repo, gated on platforms and on signer's
// signature, its key loaded as the configuration loads it.
func gatedSource(t *testing.T, repo name.Repository, signer *cosigntest.Signer, platforms []string) catalog.Source {
	t.Helper()
	src := semverSource(t, "k3s", repo.String())
	key, err := gates.LoadKey(signer.PubFile)
	if err != nil {
		t.Fatal(err)
	}
	src.Gates = resolver.Gates{Platforms: platforms, SignatureKeyFile: signer.PubFile, SignatureKeyID: key.ID()}
	return src
}
