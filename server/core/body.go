package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
)

// Body limits (CONTRACT section 12): a write is a few fields; an
// Alertmanager group may hold thousands of alerts, and a 413 there would
// leave a rollout running exactly when many nodes are down (Alertmanager
// does not retry a 4xx).
const (
	MaxWriteBody        = 64 << 10
	MaxAlertmanagerBody = 8 << 20
)

// ErrBodyTooLarge and errNotJSON are the server's own additions to the
// taxonomy, like ErrRateLimited: only decodeBody produces them.
var (
	ErrBodyTooLarge = errors.New("too large")
	errNotJSON      = errors.New("unsupported media type")
)

// DecodeBody reads a JSON body into dst. Unknown fields are an error: in a
// write, a misspelt "force" must not silently mean false. So is a body that
// does not say it is JSON (415; curl -d sends a form type) and anything
// after the JSON value (400): a body is one value, not a stream.
func DecodeBody(c echo.Context, dst any, required bool) error {
	return decode(c, dst, required, true, MaxWriteBody)
}

// DecodeForeign is decodeBody for a body another program defines (an
// Alertmanager webhook), up to limit bytes: fields it adds later are
// ignored, not refused.
func DecodeForeign(c echo.Context, dst any, limit int64) error {
	return decode(c, dst, true, false, limit)
}

func decode(c echo.Context, dst any, required, strict bool, limit int64) error {
	r := c.Request()
	if r.Body == nil || r.ContentLength == 0 {
		if required {
			return fmt.Errorf("%w: a JSON body is required", resolver.ErrInvalid)
		}
		return nil
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		return fmt.Errorf("%w: Content-Type %q: the body must be application/json", errNotJSON, ct)
	}
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), r.Body, limit))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) && !required {
			return nil
		}
		if tl := OverLimit(err); tl != nil {
			return tl
		}
		return fmt.Errorf("%w: request body: %w", resolver.ErrInvalid, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: request body: data after the JSON value", resolver.ErrInvalid)
	}
	return nil
}

// IgnoreBody reads and drops the body of a route that takes none (scan,
// sign-out, cancelling a freeze). A client may send one (curl -d, a form
// post) and up to MaxWriteBody is accepted; past it the answer is 413 like
// every other write's. Left unread, net/http would discard a small body
// itself and answer a large one with this route's success and a closed
// connection, so the limit would hold nowhere a client could see.
func IgnoreBody(c echo.Context) error {
	r := c.Request()
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return nil
	}
	if r.ContentLength > MaxWriteBody {
		return tooLarge(MaxWriteBody)
	}
	_, err := io.Copy(io.Discard, http.MaxBytesReader(c.Response(), r.Body, MaxWriteBody))
	if tl := OverLimit(err); tl != nil {
		return tl
	}
	if err != nil {
		return fmt.Errorf("%w: request body: %w", resolver.ErrInvalid, err)
	}
	return nil
}

// OverLimit is the 413 naming the limit for a read that hit
// http.MaxBytesReader's limit, nil for any other outcome.
func OverLimit(err error) error {
	var tl *http.MaxBytesError
	if errors.As(err, &tl) {
		return tooLarge(tl.Limit)
	}
	return nil
}

func tooLarge(limit int64) error {
	return fmt.Errorf("%w: request body is over the limit of %d bytes", ErrBodyTooLarge, limit)
}

// isJSON reports whether a Content-Type is application/json or a +json type.
func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == echo.MIMEApplicationJSON || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// ReasonOf takes the reason from the JSON body or, for clients that cannot
// send a body with DELETE, from ?reason=.
func ReasonOf(c echo.Context) (string, error) {
	var req openapi.ReasonRequest
	if err := DecodeBody(c, &req, false); err != nil {
		return "", err
	}
	if req.Reason == "" {
		req.Reason = c.QueryParam("reason")
	}
	return req.Reason, nil
}
