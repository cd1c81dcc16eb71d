package store_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/migrations"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/catalog"
	"github.com/tidemark-dev/tidemark/store"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

// source is a configured source as the config loader would build it.
func source(t testing.TB, name string) catalog.Source {
	t.Helper()
	p, err := resolver.NewParser(resolver.SchemeJuju, "")
	if err != nil {
		t.Fatal(err)
	}
	return catalog.Source{Name: name, Image: "example.com/" + name, Parser: p}
}

// newStore is a store on a fresh database with sources synced, and the
// database's URL for checking what landed.
func newStore(t testing.TB, names ...string) (*store.Store, string) {
	t.Helper()
	u := storetest.URL(t)
	st, err := store.Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	var srcs []catalog.Source
	for _, n := range names {
		srcs = append(srcs, source(t, n))
	}
	if err := st.SyncSources(context.Background(), srcs); err != nil {
		t.Fatal(err)
	}
	return st, u
}

// tags builds unparsed tags by name; the store does not care whether they parse.
func tags(names ...string) []resolver.Tag {
	out := make([]resolver.Tag, len(names))
	for i, n := range names {
		out[i] = resolver.InvalidTag(n, "test")
	}
	return out
}

// query runs SQL straight against a store's database, for checking what landed.
func query(t testing.TB, url, sql string, args ...any) [][]any {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) { return r.Values() })
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func TestOpenFailsWithOneLineNamingHostPort(t *testing.T) {
	tests := []struct {
		name, url string
		want      error
		contains  string
	}{
		{"refused", "postgres://tm:s3cret@127.0.0.1:1/db?connect_timeout=5", resolver.ErrUnavailable, "127.0.0.1:1"},
		{"bad url", "postgres://tm:s3cret@127.0.0.1:notaport/db", resolver.ErrInvalid, "database URL"},
		{"wrong password", strings.Replace(storetest.AdminURL(t), "postgres@", "nosuchuser:s3cret@", 1), resolver.ErrUnavailable, "nosuchuser"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := store.Open(ctx, tt.url, nil)
			if err == nil {
				st.Close()
				t.Fatal("Open succeeded")
			}
			msg := err.Error()
			t.Log(msg)
			if !errors.Is(err, tt.want) || !strings.Contains(msg, tt.contains) ||
				strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
				t.Errorf("Open error = %q; want one line wrapping %v, naming %q, without the password", msg, tt.want, tt.contains)
			}
		})
	}
}

func TestAuditRefusesUpdateDeleteTruncate(t *testing.T) {
	u := storetest.URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `insert into audit (actor, action, channel, to_version) values ('a', 'pin', 'c', '1.0.0')`); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`update audit set actor = 'mallory'`,
		`delete from audit`,
		`truncate audit`,
	} {
		t.Run(strings.Fields(sql)[0]+" refused", func(t *testing.T) {
			_, err := conn.Exec(ctx, sql)
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("%s: err = %v, want append-only refusal", sql, err)
			}
		})
	}
	var n int
	if err := conn.QueryRow(ctx, `select count(*) from audit where actor = 'a'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit rows = %d, %v; want the original 1", n, err)
	}
}

func TestMigrateConcurrentlyAndTwice(t *testing.T) {
	u := storetest.EmptyURL(t)
	ctx := context.Background()
	const replicas = 4
	errs := make(chan error, replicas)
	for i := 0; i < replicas; i++ {
		go func() {
			st, err := store.Open(ctx, u, nil)
			if err != nil {
				errs <- err
				return
			}
			defer st.Close()
			errs <- st.Migrate(ctx)
		}()
	}
	for i := 0; i < replicas; i++ {
		if err := <-errs; err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	files, _ := fs.Glob(migrations.FS, "*.sql")
	got, want := fmt.Sprint(query(t, u, `select version from schema_version`)), fmt.Sprintf("[[%d]]", len(files))
	if got != want {
		t.Errorf("schema_version = %v, want %v", got, want)
	}
}
