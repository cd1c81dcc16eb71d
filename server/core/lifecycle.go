package core

import (
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// LineJSON is a version's lifecycle object from its line; nil for none.
func LineJSON(l *lifecycle.Line) *openapi.VersionLifecycle {
	if l == nil {
		return nil
	}
	return &openapi.VersionLifecycle{Line: l.Line, Classification: string(l.Class), End: TimeOrNil(l.End), Successor: StrOrNil(l.Successor)}
}

// TimeOrNil is t in UTC, or nil when zero.
func TimeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
