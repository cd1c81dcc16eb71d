package storetest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/store/storetest"
)

func TestEachURLIsAFreshMigratedDatabaseDroppedAfter(t *testing.T) {
	ctx := context.Background()
	var first string
	t.Run("a", func(t *testing.T) {
		first = storetest.URL(t)
		conn, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `insert into sources (name, image, scheme) values ('x', 'i', 'juju')`); err != nil {
			t.Fatalf("not migrated: %v", err)
		}
	})
	second := storetest.URL(t)
	if second == first {
		t.Fatal("two tests got the same database")
	}
	conn, err := pgx.Connect(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `select count(*) from sources`).Scan(&n); err != nil || n != 0 {
		t.Errorf("second database has %d sources (%v), want a fresh one", n, err)
	}
	name := first[len(first)-len("tidemark_test_0123456789abcdef"):]
	if err := conn.QueryRow(ctx, `select count(*) from pg_database where datname = $1`, name).Scan(&n); err != nil || n != 0 {
		t.Errorf("database %s still exists after its test (%d, %v)", name, n, err)
	}
}

// BenchmarkURL measures what a test pays for its own database (the clone;
// the drops run when the benchmark ends).
func BenchmarkURL(b *testing.B) {
	storetest.URL(b) // build the template outside the timing
	for b.Loop() {
		storetest.URL(b)
	}
}
