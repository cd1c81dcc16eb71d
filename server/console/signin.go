package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/signin"
)

// Sign-in routes (CONTRACT section 15): the console's OpenID Connect
// flow. Without `oidc:` they answer 404 saying so.
func (s *Console) registerSignIn(e *echo.Echo) {
	s.Get(e, "/ui/login", s.uiLogin)
	s.Get(e, "/ui/callback", s.uiCallback)
	e.POST("/ui/logout", s.uiLogout)
}

var errNoSignIn = fmt.Errorf("%w: sign-in is not configured (oidc: in the configuration); use a token", resolver.ErrNotFound)

func (s *Console) uiLogin(c echo.Context) error {
	if s.Opts.SignIn == nil {
		return s.uiError(c, errNoSignIn)
	}
	if err := s.Opts.SignIn.Login(c.Response(), c.Request()); err != nil {
		return s.uiError(c, err)
	}
	return nil
}

func (s *Console) uiCallback(c echo.Context) error {
	if s.Opts.SignIn == nil {
		return s.uiError(c, errNoSignIn)
	}
	back, err := s.Opts.SignIn.Callback(c.Response(), c.Request())
	if errors.Is(err, signin.ErrSignIn) {
		s.Log.Warn("sign-in refused", "reason", err, "client", s.ClientAddr(c.Request()))
		return s.uiError(c, fmt.Errorf("%w: %v", resolver.ErrUnauthorized, err))
	}
	if err != nil {
		return s.uiError(c, err)
	}
	return c.Redirect(http.StatusFound, back)
}

// uiLogout ends the session on every replica. A cross-site request (a
// foreign Origin, or Sec-Fetch-Site: cross-site) without the console's
// header is refused, so another site cannot sign a person out.
func (s *Console) uiLogout(c echo.Context) error {
	if !core.SameSite(c.Request(), s.Opts.ExternalURL) {
		return fmt.Errorf("%w: a sign-out from another site: send %s: 1, or sign out from the console", resolver.ErrForbidden, core.ConsoleHeader)
	}
	if err := core.IgnoreBody(c); err != nil {
		return err
	}
	if s.Opts.SignIn != nil {
		if err := s.Opts.SignIn.Logout(c.Response(), c.Request()); err != nil {
			return err
		}
	}
	return c.Redirect(http.StatusSeeOther, "/ui/")
}
