package console

import (
	"context"
	"strconv"
	"time"

	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/server/core"
	"github.com/tidemark-dev/tidemark/server/lineview"
)

// uiTimeline is a source's lines on one time axis, release to end, with
// today marked: bars are SVG rects in units of the axis (0 to 100), so the
// page needs no script and no inline style, and the dates are written out
// beside each bar (the bar never carries them alone).
type uiTimeline struct {
	Today  time.Time
	TodayX string // today's place on the axis
	Lines  []uiLine
}

type uiLine struct {
	Line, Class                  string
	Release, DeprecatedFrom, End *time.Time
	Clusters                     int
	Segments                     []uiSegment
	HasRelease                   bool
}

// uiSegment is one stretch of a line's bar: supported, deprecated or expired.
type uiSegment struct {
	Class    string
	X, Width string
}

// timeline is source's lines as the console draws them; nil when it has
// none. Clusters are the whole fleet's active ones (0 when the database is
// away: the dates still show).
func (s *Console) timeline(ctx context.Context, v *core.View, source string, now time.Time) *uiTimeline {
	t, ok := v.Snap.Lines().Table(source)
	if !ok || len(t.Lines) == 0 {
		return nil
	}
	counts := lineview.For(s.Server).Of(ctx, v, source)
	from, to := now, now
	for _, l := range t.Lines {
		for _, at := range []time.Time{l.Release, l.DeprecatedFrom, l.End} {
			if !at.IsZero() && at.Before(from) {
				from = at
			}
			if at.After(to) {
				to = at
			}
		}
	}
	span := to.Sub(from)
	to = to.Add(span / 10) // room past the last date, so "no end" reads as open
	span = to.Sub(from)
	if span <= 0 {
		span = time.Hour
	}
	x := func(at time.Time) float64 { return 100 * float64(at.Sub(from)) / float64(span) }
	out := &uiTimeline{Today: now, TodayX: axis(x(now))}
	for _, l := range t.Lines {
		u := uiLine{Line: l.Line, Class: string(l.Class), Release: lineview.TimeOrNil(l.Release), DeprecatedFrom: lineview.TimeOrNil(l.DeprecatedFrom),
			End: lineview.TimeOrNil(l.End), Clusters: counts[l.Line], HasRelease: !l.Release.IsZero()}
		if u.HasRelease {
			u.Segments = segments(l, to, x)
		}
		out.Lines = append(out.Lines, u)
	}
	return out
}

// segments are l's bar from its release to the axis's end.
func segments(l lifecycle.Line, to time.Time, x func(time.Time) float64) []uiSegment {
	dep, end := l.DeprecatedFrom, l.End
	if end.IsZero() {
		end = to
	}
	if dep.IsZero() || dep.After(end) {
		dep = end
	}
	var out []uiSegment
	add := func(class string, a, b time.Time) {
		if b.After(a) {
			out = append(out, uiSegment{Class: class, X: axis(x(a)), Width: axis(x(b) - x(a))})
		}
	}
	add(string(lifecycle.Supported), l.Release, dep)
	add(string(lifecycle.Deprecated), dep, end)
	if !l.End.IsZero() {
		add(string(lifecycle.Expired), end, to)
	}
	return out
}

func axis(f float64) string {
	return strconvFloat(max(0, min(100, f)))
}

func strconvFloat(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }
