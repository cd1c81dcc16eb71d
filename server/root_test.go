package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tidemark-dev/tidemark/openapi"
)

// TestRootsAnswerWithLinks: a person or client starting at the server's
// address, /v1-release or /api/v1 finds links, absolute, that work.
func TestRootsAnswerWithLinks(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "https://tidemark.example.com")
	for _, path := range []string{"/", "/v1-release", "/api/v1"} {
		t.Run(path+" links to channels and the spec", func(t *testing.T) {
			res, body := get(t, ts, path)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("%d %s, want 200", res.StatusCode, body)
			}
			var root openapi.Root
			if err := json.Unmarshal(body, &root); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{
				"self":       "https://tidemark.example.com" + path,
				"v1-release": "https://tidemark.example.com/v1-release/channels",
				"openapi":    "https://tidemark.example.com/openapi.yaml",
				"fleet":      "https://tidemark.example.com/api/v1/fleet",
				"console":    "https://tidemark.example.com/ui/",
			} {
				if root.Links[name] != want {
					t.Errorf("links.%s = %q, want %q", name, root.Links[name], want)
				}
			}
		})
	}
}

// TestSingularChannelURLIsThePlural: channelserver clients ask
// /v1-release/channel/{name} as well; it answers what the plural does.
func TestSingularChannelURLIsThePlural(t *testing.T) {
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	for _, name := range []string{"stable", "v1.33", "nope"} {
		t.Run(name+" answers like the plural", func(t *testing.T) {
			plural := fetch(t, http.MethodGet, ts.URL+"/v1-release/channels/"+name)
			singular := fetch(t, http.MethodGet, ts.URL+"/v1-release/channel/"+name)
			if singular.status != plural.status || singular.header.Get("Location") != plural.header.Get("Location") || singular.body != plural.body {
				t.Errorf("singular %d %q %q, plural %d %q %q", singular.status, singular.header.Get("Location"), singular.body,
					plural.status, plural.header.Get("Location"), plural.body)
			}
		})
	}
}
