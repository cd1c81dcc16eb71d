package indexer

// Where a listing may send credentials: only to the registry it lists, over
// the scheme it started with; and which credentials: the source's password,
// else the keychain.

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
)

func TestListRefusesLinkToAnotherHost(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	reg.set(func(r *testRegistry) {
		r.fault = func(w http.ResponseWriter, req *http.Request) bool {
			if !strings.HasSuffix(req.URL.Path, "/tags/list") {
				return false
			}
			w.Header().Set("Link", `<http://169.254.169.254/v2/app/tags/list?last=x>; rel="next"`)
			w.Write([]byte(`{"tags":["v1.0.0"]}`))
			return true
		}
	})
	_, _, err := list(t, newTestIndexer(t, nil, reg, "app"))
	if err == nil || !strings.Contains(err.Error(), "leaves registry") {
		t.Fatalf("err = %v, want a refusal to leave the registry", err)
	}
}

func TestNextLinkStaysOnTheRegistryAndItsScheme(t *testing.T) {
	repo, err := name.NewRepository("reg.example/team/app")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://reg.example/v2/team/app/tags/list?n=2")
	tests := []struct {
		name    string
		header  string
		want    string // the next URL; "" with wantErr "" means no next page
		wantErr string
	}{
		{"no header is the last page", "", "", ""},
		{"a relative link resolves against the page", `</v2/team/app/tags/list?n=2&last=b>; rel="next"`, "https://reg.example/v2/team/app/tags/list?n=2&last=b", ""},
		{"an absolute link on the same scheme and host is followed", `<https://reg.example/v2/team/app/tags/list?last=b>; rel="next"`, "https://reg.example/v2/team/app/tags/list?last=b", ""},
		{"a link to plain http on the same host is refused", `<http://reg.example/v2/team/app/tags/list?last=b>; rel="next"`, "", "changes the scheme"},
		{"a link to another host is refused", `<https://evil.example/v2/team/app/tags/list?last=b>; rel="next"`, "", "leaves registry"},
		{"a link that is not a tag list is refused", `</v2/team/app/manifests/latest>; rel="next"`, "", "not a tag list"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nextLink(tc.header, base, repo)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("nextLink = %v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var next string // "" for no next page
			if got != nil {
				next = got.String()
			}
			if next != tc.want {
				t.Errorf("next = %q, want %q", next, tc.want)
			}
		})
	}
}

func TestListUsesTheDockerKeychain(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	reg.set(func(r *testRegistry) { r.token, r.user, r.password = "tok-kc", "alice", "kc-pass" })
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("alice:kc-pass"))
	cfg := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
	got, _, err := list(t, newTestIndexer(t, nil, reg, "app"))
	if err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v; want the tag via config.json credentials", got, err)
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials: anonymous, refused
	if _, _, err := list(t, newTestIndexer(t, nil, reg, "app")); err == nil {
		t.Fatal("listed anonymously from a registry that wants credentials")
	}
}

// staticKeychain hands out one authenticator for every registry.
type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }

func TestListUsesTheGivenKeychainNotTheEnvironment(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	reg.set(func(r *testRegistry) { r.token, r.user, r.password = "tok-kc", "alice", "kc-pass" })
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // the default keychain would find nothing
	src := testSource(t, "app", reg.host+"/app")
	ix, err := New(Options{
		Sources:  []Source{src},
		Store:    unusedStore{},
		Log:      testLog(t),
		Keychain: staticKeychain{&authn.Basic{Username: "alice", Password: "kc-pass"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ix.retry = fastRetry
	if got, _, err := list(t, ix); err != nil || len(got) != 1 {
		t.Fatalf("got %v, %v; want the tag via the given keychain", got, err)
	}
}
