// Package tufview serves Tidemark's TUF repository read-only under /tuf/:
// the metadata as signed and the target files, from Postgres, in the
// layout go-tuf's updater expects with consistent snapshots
// (/tuf/metadata/N.root.json, timestamp.json, N.snapshot.json,
// N.targets.json; /tuf/targets/channels/<sha256>.<name>.json). Anything
// missing, the next root included, is 404. No credentials.
package tufview

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/signed"
)

// Store reads what is published (*store.Store).
type Store interface {
	TUFMeta(ctx context.Context, role string, version int64) (signed.Meta, error)
	TUFTarget(ctx context.Context, path, hash string) ([]byte, error)
}

// View serves the repository.
type View struct {
	Store Store
}

// Register adds the /tuf/ routes; get registers a GET (and HEAD) route the
// way the server does, so the drift test sees them.
func (v *View) Register(get func(path string, h echo.HandlerFunc)) {
	get("/tuf/metadata/:file", v.metadata)
	// Every target is a channel's: channels/<sha256>.<name>.json.
	get("/tuf/targets/channels/:file", v.target)
}

var (
	versioned = regexp.MustCompile(`^([1-9][0-9]{0,18})\.(root|snapshot|targets)\.json$`)
	hashed    = regexp.MustCompile(`^([0-9a-f]{64})\.(.+)$`)
)

func (v *View) metadata(c echo.Context) error {
	file := c.Param("file")
	role, version := "", int64(0)
	if file == "timestamp.json" {
		role = signed.Timestamp
	} else if m := versioned.FindStringSubmatch(file); m != nil {
		role = m[2]
		version, _ = strconv.ParseInt(m[1], 10, 64)
	} else {
		return notFound(file)
	}
	if v.Store == nil {
		return fmt.Errorf("%w: signed answers are not configured (tuf: in the configuration)", resolver.ErrNotFound)
	}
	m, err := v.Store.TUFMeta(c.Request().Context(), role, version)
	if err != nil {
		return err
	}
	return send(c, m.Body)
}

func (v *View) target(c echo.Context) error {
	base := c.Param("file")
	dir := "channels/"
	m := hashed.FindStringSubmatch(base)
	if m == nil || strings.Contains(base, "/") || len(base) > 512 {
		return notFound(dir + base)
	}
	if v.Store == nil {
		return fmt.Errorf("%w: signed answers are not configured (tuf: in the configuration)", resolver.ErrNotFound)
	}
	b, err := v.Store.TUFTarget(c.Request().Context(), dir+m[2], m[1])
	if err != nil {
		return err
	}
	return send(c, b)
}

func send(c echo.Context, b []byte) error {
	// Versioned and hashed names never change their bytes; timestamp.json
	// does, at least daily: clients must ask again.
	if c.Param("file") == "timestamp.json" {
		c.Response().Header().Set("Cache-Control", "no-cache")
	} else {
		c.Response().Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	return c.Blob(http.StatusOK, "application/json", b)
}

func notFound(name string) error {
	if len(name) > 128 {
		name = name[:128] + "…"
	}
	return fmt.Errorf("%w: no TUF file %q here: metadata is N.root.json, timestamp.json, N.snapshot.json, N.targets.json; targets are <sha256>.<name>", resolver.ErrNotFound, name)
}
