package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
)

func testSource(t *testing.T, name, image string) Source {
	t.Helper()
	p, err := resolver.NewParser(resolver.SchemeSemver, "")
	if err != nil {
		t.Fatal(err)
	}
	return Source{Source: catalog.Source{Name: name, Image: image, Parser: p}, Insecure: true}
}

// newTestIndexer indexes one source "app" at reg/<repo>.
func newTestIndexer(t *testing.T, st Store, reg *testRegistry, repo string, edit ...func(*Source)) *Indexer {
	t.Helper()
	src := testSource(t, "app", reg.host+"/"+repo)
	for _, e := range edit {
		e(&src)
	}
	if st == nil {
		st = unusedStore{}
	}
	opts := Options{Sources: []Source{src}, Store: st, Metrics: prometheus.NewRegistry(), Log: testLog(t)}
	if s, ok := st.(*store.Store); ok {
		opts.Lock = storeLock(s)
	}
	ix, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ix.retry = fastRetry
	return ix
}

// storeLock is the store's indexer lock as Options.Lock, as serve wires it.
func storeLock(st *store.Store) TryLock {
	return func(ctx context.Context) (<-chan struct{}, func(), bool, error) {
		l, held, err := st.TryIndexerLock(ctx)
		return l.Lost(), l.Release, held, err
	}
}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// list runs the listing half of a scan.
func list(t *testing.T, ix *Indexer) ([]string, int, error) {
	t.Helper()
	var n atomic.Int64
	_, tags, err := ix.listTags(context.Background(), ix.log, ix.order[0], &n)
	return tags, int(n.Load()), err
}

func tagNames(n int) []string {
	var tags []string
	for i := range n {
		tags = append(tags, fmt.Sprintf("v1.0.%d", i))
	}
	sort.Strings(tags)
	return tags
}
