package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// specExample fills the path parameters of a spec path with values the
// k3s snapshot has, and adds the query a route cannot answer 200 without.
var specExample = strings.NewReplacer(
	"{name}", "v1.33", "{source}", "k3s", "{version}", "v1.33.6+k3s2",
)

var specExampleQuery = map[string]string{
	"/api/v1/resolve": "?source=k3s&current=v1.32.1%2Bk3s1",
}

// TestHeadAnswersLikeGet: every GET route of openapi.yaml answers HEAD
// with GET's status and headers and no body (monitors, `curl -I`).
func TestHeadAnswersLikeGet(t *testing.T) {
	doc, _ := loadSpec(t)
	_, ts, _ := newTestServer(t, k3sSnapshot(t), "")
	var paths []string
	for path, item := range doc.Paths.Map() {
		if item.Get != nil {
			paths = append(paths, path)
		}
	}
	slices.Sort(paths)
	for _, path := range paths {
		url := specExample.Replace(path) + specExampleQuery[path]
		t.Run(url+" answers HEAD like GET", func(t *testing.T) {
			get := fetch(t, http.MethodGet, ts.URL+url)
			head := fetch(t, http.MethodHead, ts.URL+url)
			if head.status != get.status {
				t.Errorf("HEAD %d, GET %d", head.status, get.status)
			}
			if diff := cmp.Diff(get.header, head.header); diff != "" {
				t.Errorf("headers (-GET +HEAD):\n%s", diff)
			}
			if head.body != "" {
				t.Errorf("HEAD has a body: %.80q", head.body)
			}
		})
	}
}

type fetched struct {
	status int
	header http.Header
	body   string
}

func fetch(t *testing.T, method, url string) fetched {
	t.Helper()
	res, b := send(t, method, url, "", "")
	h := res.Header.Clone()
	h.Del("Date")
	return fetched{res.StatusCode, h, string(b)}
}
