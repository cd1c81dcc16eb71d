package pg_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/store/internal/pg"
	"github.com/tidemark-dev/tidemark/store/storetest"
)

type copyRow struct {
	ID    int32
	Name  *string
	OK    bool
	N     *int32
	At    time.Time
	Valid bool
}

// copyInto runs CopyRows into a fresh table and reads back what landed.
func copyInto(t *testing.T, n int, row func(i int, r *pg.Row)) (int64, []copyRow, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, storetest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	if _, err := conn.Exec(ctx, `create table c (id int primary key, name text, ok boolean, n int, at timestamptz, "select" boolean)`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	written, err := pg.CopyRows(ctx, tx, "c", []string{"id", "name", "ok", "n", "at", "select"}, n, row)
	if err != nil {
		_ = tx.Rollback(ctx)
		return 0, nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(ctx, `select id, name, ok, n, at, "select" from c order by id`)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[copyRow])
	if err != nil {
		t.Fatal(err)
	}
	return written, got, nil
}

func TestCopyRowsWritesEachTypeAtItsLimits(t *testing.T) {
	at := []time.Time{
		time.Date(2026, 11, 26, 1, 2, 3, 456789999, time.UTC), // nanoseconds truncated
		time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 0, 0, time.FixedZone("x", 3600)),
	}
	names := []string{"", "v1.33.6+k3s1", "häufig ✓", strings.Repeat("x", 100_000)}
	nums := []int{0, -1, math.MaxInt32, math.MinInt32, math.MaxInt32 + 1, math.MinInt32 - 1, 999999999999999999}
	n := max(len(at), len(names), len(nums))
	written, got, err := copyInto(t, n, func(i int, r *pg.Row) {
		r.Int4OrNull(i)
		if i < len(names) {
			r.Text(names[i])
		} else {
			r.Null()
		}
		r.Bool(i%2 == 0)
		r.Int4OrNull(nums[i%len(nums)])
		r.Timestamptz(at[i%len(at)])
		r.Bool(true)
	})
	if err != nil {
		t.Fatal(err)
	}
	if written != int64(n) || len(got) != n {
		t.Fatalf("wrote %d, read %d rows, want %d", written, len(got), n)
	}
	for i, g := range got {
		var name *string
		if i < len(names) {
			name = &names[i]
		}
		var num *int32
		if v := nums[i%len(nums)]; v >= math.MinInt32 && v <= math.MaxInt32 {
			v32 := int32(v)
			num = &v32
		}
		want := copyRow{ID: int32(i), Name: name, OK: i%2 == 0, N: num, At: at[i%len(at)].Truncate(time.Microsecond), Valid: true}
		if diff := cmp.Diff(want, g, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
			t.Errorf("row %d (-want +got):\n%s", i, diff)
		}
	}
}

// Many rows cross the 64 KiB chunks CopyRows encodes ahead; none is lost
// or doubled at a chunk's edge, and no rows at all is a COPY of none.
func TestCopyRowsAcrossChunks(t *testing.T) {
	for _, n := range []int{0, 1, 40_000} {
		written, got, err := copyInto(t, n, func(i int, r *pg.Row) {
			r.Int4OrNull(i)
			r.Text(strings.Repeat("t", i%97))
			r.Bool(false)
			r.Null()
			r.Timestamptz(time.Unix(int64(i), 0))
			r.Bool(false)
		})
		if err != nil {
			t.Fatalf("%d rows: %v", n, err)
		}
		if written != int64(n) || len(got) != n {
			t.Fatalf("%d rows: wrote %d, read %d", n, written, len(got))
		}
		for i, g := range got {
			if g.ID != int32(i) || g.Name == nil || len(*g.Name) != i%97 || !g.At.Equal(time.Unix(int64(i), 0)) {
				t.Fatalf("%d rows: row %d read back as %+v", n, i, g)
			}
		}
	}
}

func TestCopyRowsRefusesBadRows(t *testing.T) {
	tests := []struct {
		name string
		row  func(i int, r *pg.Row)
		want string
	}{
		{"a field short", func(i int, r *pg.Row) { r.Int4OrNull(i) }, "copy row 0: 1 fields for 6 columns"},
		{"a field too many", func(i int, r *pg.Row) {
			r.Int4OrNull(i)
			for range 6 {
				r.Null()
			}
		}, "copy row 0: 7 fields for 6 columns"},
		{"a NUL byte in text", func(i int, r *pg.Row) {
			r.Int4OrNull(i)
			r.Text("a\x00b")
			for range 4 {
				r.Null()
			}
		}, "invalid byte sequence"},
		{"bytes that are not UTF-8", func(i int, r *pg.Row) {
			r.Int4OrNull(i)
			r.Text("\xff")
			for range 4 {
				r.Null()
			}
		}, "invalid byte sequence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := copyInto(t, 3, tt.row)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
