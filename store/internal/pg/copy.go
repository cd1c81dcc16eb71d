package pg

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// CopyRows streams n rows into table's columns with COPY ... FROM STDIN in
// Postgres' binary format, asking row for each one in turn, and returns the
// rows written. It is pgx's CopyFrom without the []any a row and the
// encode plan looked up for every value: for the tags of a first index
// (1,000 sources x 1,000 tags, 16 columns) that lookup and boxing were a
// quarter of the indexing replica's CPU. Only the column types Row writes
// are supported; a row that writes another number of fields than there are
// columns fails the COPY.
func CopyRows(ctx context.Context, tx pgx.Tx, table string, columns []string, n int, row func(i int, r *Row)) (int64, error) {
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = pgx.Identifier{c}.Sanitize()
	}
	sql := fmt.Sprintf("copy %s (%s) from stdin (format binary)", pgx.Identifier{table}.Sanitize(), strings.Join(quoted, ", "))
	src := &copySource{n: n, cols: len(columns), row: row}
	src.buf = append(src.buf, copyHeader...)
	tag, err := tx.Conn().PgConn().CopyFrom(ctx, src, sql)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// copyHeader is the binary COPY signature, no flags, no header extension.
const copyHeader = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// copyChunk is about how much copySource encodes ahead of the connection.
const copyChunk = 64 << 10

// copySource encodes rows as the connection reads them, a chunk at a time,
// so that a large listing is never held encoded whole.
type copySource struct {
	n, i, cols int
	row        func(i int, r *Row)
	buf        []byte
	off        int
	r          Row
	done       bool
}

func (s *copySource) Read(p []byte) (int, error) {
	if s.off == len(s.buf) {
		if s.done {
			return 0, io.EOF
		}
		s.fill()
	}
	if s.r.err != nil {
		return 0, s.r.err
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

func (s *copySource) fill() {
	s.buf, s.off = s.buf[:0], 0
	for s.i < s.n && len(s.buf) < copyChunk {
		s.r = Row{buf: binary.BigEndian.AppendUint16(s.buf, uint16(s.cols))}
		s.row(s.i, &s.r)
		if s.r.fields != s.cols && s.r.err == nil {
			s.r.err = fmt.Errorf("copy row %d: %d fields for %d columns", s.i, s.r.fields, s.cols)
		}
		if s.r.err != nil {
			return
		}
		s.buf = s.r.buf
		s.i++
	}
	if s.i == s.n {
		s.buf = binary.BigEndian.AppendUint16(s.buf, 0xffff) // the trailer
		s.done = true
	}
}

// Row is one row of a binary COPY; its methods append the next field.
type Row struct {
	buf    []byte
	fields int
	err    error
}

func (r *Row) field(size int) {
	r.buf = binary.BigEndian.AppendUint32(r.buf, uint32(int32(size)))
	r.fields++
}

// Null appends SQL NULL.
func (r *Row) Null() { r.field(-1) }

// Text appends a text value. Postgres refuses a NUL byte or bytes that are
// not UTF-8, failing the COPY, as it does any text parameter.
func (r *Row) Text(s string) {
	r.field(len(s))
	r.buf = append(r.buf, s...)
}

// Bool appends a boolean.
func (r *Row) Bool(v bool) {
	r.field(1)
	if v {
		r.buf = append(r.buf, 1)
	} else {
		r.buf = append(r.buf, 0)
	}
}

// Int4OrNull appends an integer, or NULL when v does not fit an int4.
func (r *Row) Int4OrNull(v int) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.Null()
		return
	}
	r.field(4)
	r.buf = binary.BigEndian.AppendUint32(r.buf, uint32(int32(v)))
}

// postgresEpoch is where a binary timestamptz counts its microseconds
// from: 2000-01-01 UTC, in microseconds since 1970.
const postgresEpoch = 946684800 * 1000000

// Timestamptz appends an instant, to the microsecond as Postgres keeps it
// (truncated, as pgx does).
func (r *Row) Timestamptz(t time.Time) {
	r.field(8)
	us := t.Unix()*1000000 + int64(t.Nanosecond())/1000
	r.buf = binary.BigEndian.AppendUint64(r.buf, uint64(us-postgresEpoch))
}
