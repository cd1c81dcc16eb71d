// Package storetest gives tests a real, freshly migrated Postgres database.
//
//	func TestX(t *testing.T) {
//		st := storetest.New(t) // *store.Store on its own migrated database
//		...
//	}
//
// DATABASE_URL must point at a Postgres server where the user may create
// databases (`make test` and `scripts/with-pg go test ./...` set it up); when
// it is unset the test fails, it never skips. The first call on a server
// builds a migrated template database, named after a hash of migrations/ so
// that a changed migration builds a new one; every New/URL then clones it
// (CREATE DATABASE ... TEMPLATE: ~0.12 s on the 2-core dev box with PG 15;
// STRATEGY FILE_COPY measured slower, ~0.17 s, for its checkpoints) and drops the clone when
// the test ends. Tests and packages may therefore run in parallel.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark-dev/tidemark/migrations"
	"github.com/tidemark-dev/tidemark/store"
)

// New returns a Store on a fresh migrated database, closed and dropped when
// t ends.
func New(t testing.TB) *store.Store {
	t.Helper()
	u := URL(t)
	st, err := store.Open(context.Background(), u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("storetest: open %s: %v", redact(u), err)
	}
	t.Cleanup(st.Close) // runs before the drop registered by URL
	return st
}

// URL returns the URL of a fresh migrated database, dropped when t ends.
// Use it to hand a database to code that opens its own Store (cmd tests).
func URL(t testing.TB) string {
	t.Helper()
	return clone(t, templateName(t))
}

// EmptyURL returns the URL of a fresh database with no schema at all,
// dropped when t ends: for testing migrations themselves.
func EmptyURL(t testing.TB) string {
	t.Helper()
	return clone(t, "template0")
}

// AdminURL is DATABASE_URL: the server's maintenance database, for tests
// that need to act on other sessions (pg_terminate_backend).
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		t.Fatal("storetest: set DATABASE_URL or run via make test (scripts/with-pg starts a throwaway Postgres)")
	}
	return u
}

func clone(t testing.TB, template string) string {
	t.Helper()
	return fresh(t, "tidemark_test_", " template "+ident(template))
}

// fresh is a new database made with clause (SQL after CREATE DATABASE
// name), dropped when the test ends.
func fresh(t testing.TB, prefix, clause string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, drop, err := create(ctx, AdminURL(t), prefix, clause)
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("storetest: %v", err)
		}
	})
	return u
}

// Create makes a database named prefix plus a random suffix on the server
// admin (a Postgres URL) points at, from template ("": the server's
// default), and returns its URL and a function that drops it. Tests use
// New, URL or EmptyURL; benchmarks call Create to start from nothing beside
// the database DATABASE_URL names.
func Create(ctx context.Context, admin, prefix, template string) (string, func(context.Context) error, error) {
	clause := ""
	if template != "" {
		// Cloning fails if anyone is connected to the template; nobody is,
		// outside templateName's short critical section.
		clause = " template " + ident(template)
	}
	return create(ctx, admin, prefix, clause)
}

// LinguisticURL is a fresh empty database whose default collation is
// ICU's en-US, where "a" sorts before "B" (the servers of many installs
// default to such a locale; scripts/with-pg's uses C.UTF-8), dropped when
// the test ends.
func LinguisticURL(t testing.TB) string {
	t.Helper()
	return fresh(t, "tidemark_test_icu_", " template template0 locale_provider icu icu_locale 'en-US' locale 'C.UTF-8'")
}

// create makes a database named prefix plus a random suffix with the
// options in clause (SQL after CREATE DATABASE name).
func create(ctx context.Context, admin, prefix, clause string) (string, func(context.Context) error, error) {
	name := prefix + randomHex(8)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %w", redact(admin), err)
	}
	defer conn.Close(ctx)
	stmt := "create database " + ident(name) + clause
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "drop database if exists "+ident(name)+" with (force)"); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
		return nil
	}
	return withDatabase(admin, name), drop, nil
}

var (
	tplOnce sync.Once
	tplName string
	tplErr  error
)

// templateName makes sure the migrated template exists and returns its name.
// A session advisory lock on the admin database serialises test binaries
// that start at the same time; inside it, a template that exists and is
// marked datistemplate is complete (the mark is set last).
func templateName(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	tplOnce.Do(func() { tplName, tplErr = ensureTemplate(admin) })
	if tplErr != nil {
		t.Fatalf("storetest: template database: %v", tplErr)
	}
	return tplName
}

const templateLockKey = int64(0x746d_7465_6d70_6c74)

func ensureTemplate(admin string) (_ string, err error) {
	h := sha256.New()
	err = fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		return "", err
	}
	name := "tidemark_tpl_" + hex.EncodeToString(h.Sum(nil))[:16]

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "select pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", err
	}
	// Closing the connection would free the lock too, but only once the
	// server notices; a failed unlock is worth knowing about.
	defer func() {
		if _, uerr := conn.Exec(ctx, "select pg_advisory_unlock($1)", templateLockKey); uerr != nil && err == nil {
			err = fmt.Errorf("unlock template lock: %w", uerr)
		}
	}()

	var ready bool
	err = conn.QueryRow(ctx, "select datistemplate from pg_database where datname = $1", name).Scan(&ready)
	switch {
	case err == nil && ready:
		return name, nil
	case err == nil: // a run died half-way through building it
		if _, err := conn.Exec(ctx, "drop database "+ident(name)+" with (force)"); err != nil {
			return "", err
		}
	case err != pgx.ErrNoRows:
		return "", err
	}
	if _, err := conn.Exec(ctx, "create database "+ident(name)+" template template0"); err != nil {
		return "", err
	}
	st, err := store.Open(ctx, withDatabase(admin, name), slog.New(slog.DiscardHandler))
	if err != nil {
		return "", err
	}
	err = st.Migrate(ctx)
	st.Close()
	if err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, "alter database "+ident(name)+" with is_template true")
	return name, err
}

func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil {
		// Key/value DSNs: a later dbname wins.
		return raw + " dbname=" + db
	}
	u.Path = "/" + db
	return u.String()
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "DATABASE_URL"
	}
	return u.Redacted()
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
