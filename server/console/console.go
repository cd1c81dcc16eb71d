package console

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
)

// Handlers here bind, call the view or core's shared reads, and render;
// page shapes are in pages.go.

//go:embed ui/templates/*.html ui/assets/*
var uiFiles embed.FS

// uiTemplates holds one template set per page, each the layout plus the
// page's own "content" and "title".
var uiTemplates = mustParseUI()

func mustParseUI() map[string]*template.Template {
	funcs := template.FuncMap{
		"utc":       func(t any) string { return timeFormat(t, "2006-01-02 15:04:05Z") },
		"iso":       func(t any) string { return timeFormat(t, time.RFC3339) },
		"short":     shortDigest,
		"deref":     func(p *string) string { return str0(p) },
		"pathEsc":   pathEscape,
		"steps":     rolloutSteps,
		"action":    actionText,
		"isInvalid": func(p *openapi.Problem, param string) bool { return p != nil && p.Param == param },
	}
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(uiFiles, "ui/templates/layout.html", "ui/templates/rows.html"))
	pages, err := fs.Glob(uiFiles, "ui/templates/page_*.html")
	if err != nil || len(pages) == 0 {
		panic(fmt.Sprintf("console templates: none embedded: %v", err))
	}
	out := map[string]*template.Template{"rows.html": base}
	for _, p := range pages {
		t := template.Must(template.Must(base.Clone()).ParseFS(uiFiles, p))
		out[path.Base(p)] = t
	}
	return out
}

// registerUI adds the console's routes. Every one is a GET (and HEAD);
// writes go to the JSON API.
func (s *Console) registerUI(e *echo.Echo) {
	// Both spellings answer the page: the spec's router cannot tell them
	// apart, and links in the pages are absolute, so neither breaks them.
	s.Get(e, "/ui", s.uiChannels)
	s.Get(e, "/ui/", s.uiChannels)
	s.Get(e, "/ui/live/channels", s.uiLiveChannels)
	s.Get(e, "/ui/channels/:name", s.uiChannel)
	s.Get(e, "/ui/sources/:source", s.uiSource)
	s.Get(e, "/ui/resolve", s.uiResolve)
	s.Get(e, "/ui/changes", s.uiChanges)
	s.Get(e, "/ui/assets/:file", s.uiAsset)
}

// rootOrConsole sends a browser at the server's address to the console and
// answers every other client with the API root's links, as before.
func (s *Console) rootOrConsole(c echo.Context) error {
	if c.Request().URL.Path == "/" && acceptsHTML(c.Request()) {
		return c.Redirect(http.StatusFound, core.BaseURL(s.Opts.ExternalURL, c.Request())+"/ui/")
	}
	return s.Root(c)
}

// acceptsHTML: browsers put text/html in Accept on navigation; curl, Go and
// the CLI send */* or application/json.
func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}

// render writes page with the layout, or the error page when rendering fails
// before anything was sent (templates execute into a buffer for that).
func (s *Console) render(c echo.Context, status int, page string, p uiPage) error {
	t, ok := uiTemplates[page]
	if !ok {
		return fmt.Errorf("console: no template %q", page)
	}
	if p.Snapshot.IsZero() {
		if v := s.Cur.Load(); v != nil {
			p.Snapshot = v.Snap.LoadedAt
		}
	}
	if s.Opts.SignIn != nil {
		p.SignIn = true
		if who, ok := s.Opts.SignIn.Session(c.Response(), c.Request()); ok {
			p.Who, p.Scopes = who.Name, who.Scopes
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		return fmt.Errorf("console: render %s: %w", page, err)
	}
	h := c.Response().Header()
	// Pages show the live state; the browser asks again each time.
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	return c.HTMLBlob(status, buf.Bytes())
}

// uiCSP allows only this server's own script and style: a template bug that
// let markup through still could not run inline script, and no page can be
// framed by another site to trick a click.
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// uiError renders err as the console's error page, with the status the
// API's error table gives it.
func (s *Console) uiError(c echo.Context, err error) error {
	p := core.ProblemFor(err)
	if p.Status >= 500 {
		s.Log.ErrorContext(c.Request().Context(), "console request failed", "path", core.LogPath(c.Request()), "err", err)
	}
	return s.render(c, p.Status, "page_error.html", uiPage{Title: p.Title, Body: &p})
}

func (s *Console) uiAsset(c echo.Context) error {
	name := core.PathParam(c, "file")
	b, err := uiFiles.ReadFile("ui/assets/" + name)
	if err != nil || strings.Contains(name, "/") || assetTypes[path.Ext(name)] == "" {
		return s.uiError(c, core.BadParam("file", fmt.Errorf("%w: console asset %q", resolver.ErrNotFound, name)))
	}
	h := c.Response().Header()
	// Assets change only with the binary; an hour keeps a deploy visible
	// soon while sparing a reload of every page.
	h.Set("Cache-Control", "public, max-age=3600")
	h.Set("X-Content-Type-Options", "nosniff")
	return c.Blob(http.StatusOK, assetTypes[path.Ext(name)], b)
}

// assetTypes are fixed here rather than taken from the system's MIME table,
// which differs between machines (.js is application/javascript on some).
var assetTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
}

// problemOf is err as the API would answer it; nil for nil.
func problemOf(err error) *openapi.Problem {
	if err == nil {
		return nil
	}
	p := core.ProblemFor(err)
	return &p
}

// timeFormat formats a time.Time or *time.Time (as templates hold both) in
// UTC: one zone for everyone reading the same page.
func timeFormat(t any, layout string) string {
	switch t := t.(type) {
	case time.Time:
		return t.UTC().Format(layout)
	case *time.Time:
		if t != nil {
			return t.UTC().Format(layout)
		}
	}
	return ""
}

func shortDigest(p *string) string {
	d := str0(p)
	if algo, hex, ok := strings.Cut(d, ":"); ok && len(hex) > 12 {
		return algo + ":" + hex[:12]
	}
	return d
}

func str0(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// pathEscape escapes one path segment for a link: a version's "+" stays
// readable, since the server accepts it raw.
func pathEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("-._~+", r):
			b.WriteRune(r)
		default:
			for _, c := range []byte(string(r)) {
				fmt.Fprintf(&b, "%%%02X", c)
			}
		}
	}
	return b.String()
}
