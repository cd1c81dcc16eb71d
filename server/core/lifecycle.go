package core

import (
	"time"

	"github.com/tidemark-dev/tidemark/openapi"
	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
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

// Running is the version a cluster reports when its line is deprecated or
// expired: what its answer warns of.
type Running struct {
	Version string // canonical
	Line    *lifecycle.Line
}

// endingLine is l when it is deprecated or expired, else nil.
func endingLine(l *lifecycle.Line) *lifecycle.Line {
	if l == nil || l.Class == lifecycle.Supported {
		return nil
	}
	return l
}

// WithRunning is e as the answer to a cluster reporting reported: e
// itself when that version's line is supported (or unknown), else a copy
// that carries the warning. One map lookup on the way.
func (e *Entry) WithRunning(snap *snapshot.Snapshot, reported resolver.Version) *Entry {
	l := endingLine(snap.LineOf(e.Ans.Channel.Source, reported))
	if l == nil {
		return e
	}
	c := *e
	c.Running = &Running{Version: reported.String(), Line: l}
	return &c
}

// Warning is the Warning header of e's answer (RFC 9111's 299, the one
// Kubernetes sends for deprecations); nil when the cluster's line is
// supported.
func (e *Entry) Warning() []string {
	if e.Running == nil {
		return nil
	}
	return []string{`299 tidemark "` + e.Running.Line.Warning(e.Running.Version) + `"`}
}

// lifecycleJSON adds to j what e knows of lines: the running version's
// and the channel's own when either is deprecated or expired.
func (e *Entry) lifecycleJSON(j *openapi.Channel) {
	if r := e.Running; r != nil {
		j.Running = &openapi.Running{Version: r.Version, Classification: string(r.Line.Class), End: TimeOrNil(r.Line.End)}
	}
	if l := e.Line; l != nil {
		j.Lifecycle = &openapi.ChannelLifecycle{Classification: string(l.Class), End: TimeOrNil(l.End)}
	}
}

// lifecycleCounts sorts counts (clusters by reported version on channel)
// by their version's line: a version of no known line counts as supported.
func lifecycleCounts(v *View, channel string, counts []resolver.VersionCount) openapi.FleetLifecycle {
	var out openapi.FleetLifecycle
	e := v.Entry(channel)
	for _, c := range counts {
		class := lifecycle.Supported
		if rv, ok := v.Snap.Reported(channel, c.Version); ok && e != nil {
			if l := v.Snap.LineOf(e.Ans.Channel.Source, rv); l != nil {
				class = l.Class
			}
		}
		switch class {
		case lifecycle.Expired:
			out.Expired += c.Clusters
		case lifecycle.Deprecated:
			out.Deprecated += c.Clusters
		default:
			out.Supported += c.Clusters
		}
	}
	return out
}

// lifecycleTag is what the object says of lines, for its ETag: a line
// crossing a date changes the object with no new revision.
func (e *Entry) lifecycleTag() string {
	t := ""
	if e.Line != nil {
		t += "-l" + string(e.Line.Class[0])
	}
	if e.Running != nil {
		t += "-u" + string(e.Running.Line.Class[0]) + e.Running.Version
	}
	return t
}
