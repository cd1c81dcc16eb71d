package core

import (
	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
)

// EndingLine is l when it is deprecated or expired, else nil.
func EndingLine(l *lifecycle.Line) *lifecycle.Line {
	if l == nil || l.Class == lifecycle.Supported {
		return nil
	}
	return l
}

// lifecycleJSON adds to j the running version's line and the channel's
// own, when deprecated or expired (docs/lifecycle.md).
func (e *Entry) lifecycleJSON(j *openapi.Channel) {
	if l := e.Running; l != nil {
		j.Running = &openapi.Running{Version: e.RunningVersion, Classification: string(l.Class), End: openapi.TimeOrNil(l.End.UTC())}
	}
	if l := e.Line; l != nil {
		j.Lifecycle = &openapi.ChannelLifecycle{Classification: string(l.Class), End: openapi.TimeOrNil(l.End.UTC())}
	}
}

// lifecycleTag is lifecycleJSON's part of the ETag: a line crossing a
// date changes the object with no new revision.
func (e *Entry) lifecycleTag() string {
	t := ""
	if e.Line != nil {
		t += "-l" + string(e.Line.Class[0])
	}
	if e.Running != nil {
		t += "-u" + string(e.Running.Class[0]) + e.RunningVersion
	}
	return t
}
