package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/internal/logtext"
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// problemKind is one row of the error table: the taxonomy sentinel, its
// status and the RFC 9457 type/title clients can switch on.
type problemKind struct {
	err    error
	status int
	slug   string
}

// errorTable is the only place that turns an error into a status code.
// Handlers return errors wrapping one of these sentinels; anything else is 500.
var errorTable = []problemKind{
	{resolver.ErrNotFound, http.StatusNotFound, "not-found"},
	{resolver.ErrInvalid, http.StatusBadRequest, "invalid"},
	{resolver.ErrUnprocessable, http.StatusUnprocessableEntity, "unprocessable"},
	// Stale If-Match is the only conflict the API produces; 412 is what
	// RFC 9110 prescribes for a failed precondition.
	{resolver.ErrConflict, http.StatusPreconditionFailed, "conflict"},
	// The one decision's refusals name their rule (resolver/decide.go).
	{resolver.ErrScope, http.StatusForbidden, "scope"},
	{resolver.ErrFrozen, http.StatusConflict, "freeze"},
	{resolver.ErrWindowClosed, http.StatusConflict, "window"},
	{resolver.ErrExpired, http.StatusUnprocessableEntity, "expired"},
	{resolver.ErrState, http.StatusConflict, "state-conflict"},
	{ErrEnrollment, http.StatusUnauthorized, "enrollment"},
	{resolver.ErrUnauthorized, http.StatusUnauthorized, "unauthorized"},
	{resolver.ErrForbidden, http.StatusForbidden, "forbidden"},
	{resolver.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{ErrRateLimited, http.StatusTooManyRequests, "rate-limited"},
	{ErrBodyTooLarge, http.StatusRequestEntityTooLarge, "too-large"},
	{errNotJSON, http.StatusUnsupportedMediaType, "unsupported-media-type"},
}

const problemTypePrefix = "urn:tidemark:problem:"

// ErrEnrollment refuses a channel request for its enrollment key (none
// where one is required, or a wrong or revoked one): a 401 of its own
// type, and a refused credential like any other.
var ErrEnrollment = fmt.Errorf("%w: enrollment", resolver.ErrUnauthorized)

// paramError marks err as caused by one request parameter.
type paramError struct {
	param string
	err   error
}

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

// BadParam wraps err (which should wrap a taxonomy sentinel) with the name of
// the parameter it is about.
func BadParam(param string, err error) error { return &paramError{param: param, err: err} }

// InvalidParam is a 400 about one parameter.
func InvalidParam(param, format string, args ...any) error {
	return BadParam(param, fmt.Errorf("%w: "+format, append([]any{resolver.ErrInvalid}, args...)...))
}

// ProblemFor maps err through the table.
func ProblemFor(err error) openapi.Problem {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		// Echo's own errors: unknown route (404), wrong method (405).
		slug := "http-" + strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "-"))
		return openapi.Problem{Type: problemTypePrefix + slug, Title: http.StatusText(he.Code), Status: he.Code, Detail: fmt.Sprint(he.Message)}
	}
	p := openapi.Problem{Type: problemTypePrefix + "internal", Title: http.StatusText(500), Status: 500, Detail: "internal error"}
	for _, k := range errorTable {
		if errors.Is(err, k.err) {
			p = openapi.Problem{Type: problemTypePrefix + k.slug, Title: http.StatusText(k.status), Status: k.status, Detail: err.Error()}
			break
		}
	}
	var pe *paramError
	if errors.As(err, &pe) {
		p.Param = pe.param
	}
	return p
}

// HandleError is echo's single HTTPErrorHandler. /v1-release answers in
// channelserver's error shape so its clients see what they always saw;
// everything else is application/problem+json. A HEAD answer gets the same
// headers; net/http drops its body.
func (s *Server) HandleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	p := ProblemFor(err)
	if he := (*echo.HTTPError)(nil); errors.As(err, &he) {
		// Echo's own "Not Found" says nothing a person can act on.
		r := c.Request()
		switch he.Code {
		case http.StatusNotFound:
			p.Detail = fmt.Sprintf("no route %s %s; every route is in /openapi.yaml", logtext.Cut(r.Method, 16), logtext.Cut(r.URL.Path, maxLogPath))
		case http.StatusMethodNotAllowed:
			p.Detail = fmt.Sprintf("%s is not allowed on %s; every route is in /openapi.yaml", logtext.Cut(r.Method, 16), logtext.Cut(r.URL.Path, maxLogPath))
		}
	}
	if p.Status >= 500 {
		s.Log.ErrorContext(c.Request().Context(), "request failed", "path", LogPath(c.Request()), "err", err)
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="tidemark"`)
	}
	var body []byte
	ctype := "application/problem+json"
	if strings.HasPrefix(c.Request().URL.Path, "/v1-release/") {
		// channelserver's shape, with the problem's title and detail beside
		// its message; a problemAnswer says so in its content type too.
		if pa := (*ProblemAnswer)(nil); !errors.As(err, &pa) {
			ctype = echo.MIMEApplicationJSON
		}
		if errors.Is(err, ErrEnrollment) {
			// Its type is what a client (and a person reading a Plan's
			// status) acts on: a problem detail, not channelserver's shape.
			body, _ = json.Marshal(p)
			_ = c.Blob(p.Status, "application/problem+json", body)
			return
		}
		body, _ = json.Marshal(openapi.ReleaseError{Type: "error", Links: struct{}{}, Code: releaseCode(p.Status), Message: p.Detail, Status: p.Status,
			Title: p.Title, Detail: p.Detail})
	} else {
		body, _ = json.Marshal(p)
	}
	_ = c.Blob(p.Status, ctype, body)
}

// ProblemAnswer marks an error answered as application/problem+json even
// on /v1-release: a stepwise channel's 404 for a request that reports no
// version, which the contract calls a problem detail. A
// system-upgrade-controller reads only the status of any answer but a 302.
type ProblemAnswer struct{ Err error }

func (e *ProblemAnswer) Error() string { return e.Err.Error() }
func (e *ProblemAnswer) Unwrap() error { return e.Err }

func releaseCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusBadRequest:
		return "InvalidBodyContent"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowed"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailable"
	}
	return "ServerError"
}
