package indexer

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidemark-dev/tidemark/indexer/registryhttp"
)

// hugePage streams a tag list page of n tags, never held in memory whole.
func hugePage(n int, pad int) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/tags/list") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"app","tags":[`)
		padding := strings.Repeat("x", pad)
		for i := range n {
			if i > 0 {
				io.WriteString(w, ",")
			}
			fmt.Fprintf(w, `"v1.0.%d%s"`, i, padding)
		}
		io.WriteString(w, `]}`)
		return true
	}
}

func TestListRefusesAHugePageNamingTheRegistry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tags     int
		pad      int
		wantText string
	}{
		{"too many tags", registryhttp.MaxPageTags + 1, 0, fmt.Sprintf("more than %d tags in one page", registryhttp.MaxPageTags)},
		{"too many bytes", 40_000, 1000, fmt.Sprintf("more than %d MiB in one page", registryhttp.MaxPageBytes>>20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := newTestRegistry(t)
			reg.push("app", "v1.0.0")
			reg.set(func(r *testRegistry) { r.fault = hugePage(tc.tags, tc.pad) })
			ix := newTestIndexer(t, nil, reg, "app")
			var lists atomic.Int64
			inner := reg.fault
			reg.set(func(r *testRegistry) {
				r.fault = func(w http.ResponseWriter, req *http.Request) bool {
					if strings.HasSuffix(req.URL.Path, "/tags/list") {
						lists.Add(1)
					}
					return inner(w, req)
				}
			})
			_, _, err := list(t, ix)
			if !errors.Is(err, registryhttp.ErrPageTooLarge) || !strings.Contains(err.Error(), tc.wantText) ||
				!strings.Contains(err.Error(), "registry "+reg.host) {
				t.Fatalf("err = %v, want a refusal naming registry %s and %q", err, reg.host, tc.wantText)
			}
			// Once as the registry's own page, once asked in pages of
			// pageSize (which this registry ignores); never again.
			if n := lists.Load(); n != 2 {
				t.Errorf("page fetched %d times, want 2: a refused page is not fetched again", n)
			}
		})
	}
}

func TestListReadsAPageJustUnderTheCaps(t *testing.T) {
	reg := newTestRegistry(t)
	reg.push("app", "v1.0.0")
	reg.set(func(r *testRegistry) { r.fault = hugePage(registryhttp.MaxPageTags, 0) })
	tags, _, err := list(t, newTestIndexer(t, nil, reg, "app"))
	if err != nil || len(tags) != registryhttp.MaxPageTags {
		t.Fatalf("got %d tags, err %v; want %d", len(tags), err, registryhttp.MaxPageTags)
	}
}
