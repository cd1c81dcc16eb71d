package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidemark-dev/tidemark/indexer"
	"github.com/tidemark-dev/tidemark/internal/cosigntest"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// TestAForcedPinOfAVersionWhoseGatesArePendingChecksThemThen: just after a
// start (or a push), a complete, signed version is indexed but its gates
// are not checked yet. A forced pin through a soak checks them then and
// succeeds; without an indexer to ask, the 422 says the gates are pending,
// not that the image is unsigned (issue 25 item 3).
func TestAForcedPinOfAVersionWhoseGatesArePendingChecksThemThen(t *testing.T) {
	repo, signer := signedRegistry(t)
	d := cosigntest.PushIndex(t, repo, "v1.34.0-k3s1", "linux/amd64")
	signer.SignAndPush(t, repo, d)

	ctx := context.Background()
	st := openStore(t, storetest.URL(t))
	src := gatedSource(t, repo, signer, []string{"linux/amd64"})
	if err := st.SyncSources(ctx, []catalog.Source{src}); err != nil {
		t.Fatal(err)
	}
	// Indexed with its digest, as a push or a scan's first phase leaves it:
	// gates not yet checked.
	if _, err := st.ApplyScan(ctx, resolver.ScanResult{Source: "k3s", Complete: true, Tags: []resolver.Tag{src.Classify("v1.34.0-k3s1")}}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetDigests(ctx, "k3s", map[string]string{"v1.34.0-k3s1": d.String()}); err != nil {
		t.Fatal(err)
	}
	ix, err := indexer.New(indexer.Options{Store: st, Sources: []indexer.Source{{Source: src, Insecure: true, Exclude: regexpMust(`\.sig$`)}}})
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	channels := []catalog.Channel{{Name: "aged", Source: "k3s", Stream: resolver.Released, Soak: &day}}
	tok, err := st.CreateToken(ctx, "rel", []string{ScopePromote})
	if err != nil {
		t.Fatal(err)
	}
	pin := func(gate GateFunc) (int, string) {
		t.Helper()
		srv, err := New(Options{Data: st, Store: st, Sources: []catalog.Source{src}, Channels: channels, Gate: gate})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Reload(ctx); err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(validating(t, srv.Handler()))
		defer ts.Close()
		req, _ := http.NewRequest(http.MethodPut, ts.URL+"/api/v1/channels/aged/pin", strings.NewReader(`{"version":"v1.34.0+k3s1","reason":"hotfix","force":true}`))
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
	if code, body := pin(nil); code != http.StatusUnprocessableEntity || !strings.Contains(body, "not checked yet") {
		t.Errorf("pin on a replica that cannot check gates: %d %s, want 422 saying they are not checked yet", code, body)
	}
	if code, body := pin(func(ctx context.Context, source, tag string) error { return ix.GateTag(ctx, source, tag) }); code != http.StatusOK {
		t.Errorf("forced pin with the gates checked then: %d %s, want 200", code, body)
	}
}
