// Package migrations holds Tidemark's schema as numbered plain-SQL files
// (NNN_name.sql, tern's format: up SQL, then optionally
// "---- create above / drop below ----" and the down SQL). store.Migrate
// applies them; storetest hashes them to name its template database.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed *.sql
var files embed.FS

// FS is the migration files, at the root of the file system.
var FS fs.FS = files
