// Package console is Tidemark's web console under /ui/ (and the browser's
// landing at /): server-rendered HTML from the same snapshot the API
// answers from, so every read works without JavaScript. A small embedded
// script (ui/assets/console.js) does what HTML cannot: writes, which carry
// the token or the session through the JSON API, and the live channel
// list. Nothing is fetched from anywhere else: no CDN, no fonts.
//
// Pages are rendered from the same calls the API's handlers make (the
// view, core's shapes and shared reads), never by calling a handler. The
// OpenID Connect sign-in routes (/ui/login, /ui/callback, /ui/logout) are
// here too; the flow itself is server/signin's.
package console

import (
	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/evidenceview"
)

// Console is the console's handlers, on the shared core.
type Console struct {
	*core.Server
	uiFleet fleetCountsCache // the channel list's fleet counts, reused a few seconds
	ev      *evidenceview.Reader
}

// Register adds the console's routes to e, and / (a browser goes to the
// console, every other client gets the API root's links).
func Register(e *echo.Echo, c *core.Server, ev *evidenceview.Reader) {
	s := &Console{Server: c, ev: ev}
	s.Get(e, "/", s.rootOrConsole)
	s.registerUI(e)
	s.registerSignIn(e)
}
