package resolver

import "errors"

// The error taxonomy. Every layer wraps one of these with %w; the server maps
// them to HTTP status codes in one table (server/core/errors.go). Nothing outside
// this list should decide a status code.
var (
	ErrNotFound      = errors.New("not found")
	ErrInvalid       = errors.New("invalid")
	ErrConflict      = errors.New("conflict")      // stale ETag / If-Match, concurrent change
	ErrUnprocessable = errors.New("unprocessable") // well-formed but not allowed: ineligible pin, downgrade, skip
	// ErrState: the thing is not in a state that allows the action (a
	// pause of a halted rollout). Not a stale precondition: 409, not 412.
	ErrState        = errors.New("state conflict")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrUnavailable  = errors.New("unavailable") // database or registry gone
	// The one decision's refusals (decide.go), each its own problem type:
	// a channel limit or a missing admin scope (403), a freeze (409), a
	// closed window (409).
	ErrScope        = errors.New("not in scope")
	ErrFrozen       = errors.New("frozen")
	ErrWindowClosed = errors.New("outside the channel's windows")
	// ErrExpired: the change would start clusters on a version whose
	// line has ended (422).
	ErrExpired = errors.New("expired")
)
