package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
)

// The adoption chart: one small SVG per version on the channel page, its
// told, adopted and stuck counts over time as step lines (the leader saves
// a point when they change, at most one a minute), scaled to the most
// clusters ever told it. Server-rendered, no JavaScript; its label says
// the same in words.

const (
	chartW, chartH = 200.0, 40.0
)

// uiChart is one version's adoption over time.
type uiChart struct {
	Told, Adopted, Stuck string // polyline points
	Label                string // what it shows, in words
	From                 time.Time
}

// adoptionChart draws points (oldest first) up to now; nil without any.
func adoptionChart(points []resolver.EvidencePoint, now time.Time) *uiChart {
	if len(points) == 0 {
		return nil
	}
	from := points[0].At
	span := now.Sub(from)
	if span < time.Minute {
		span = time.Minute
	}
	top := 1
	for _, p := range points {
		top = max(top, p.Told)
	}
	x := func(t time.Time) float64 { return chartW * float64(t.Sub(from)) / float64(span) }
	y := func(n int) float64 { return chartH - chartH*float64(n)/float64(top) }
	line := func(val func(resolver.EvidencePoint) int) string {
		var b strings.Builder
		add := func(px, py float64) {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(px, 'f', 1, 64))
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(py, 'f', 1, 64))
		}
		for i, p := range points {
			if i > 0 {
				add(x(p.At), y(val(points[i-1]))) // a step: the old value until this point
			}
			add(x(p.At), y(val(p)))
		}
		add(chartW, y(val(points[len(points)-1])))
		return b.String()
	}
	first, last := points[0], points[len(points)-1]
	return &uiChart{
		Told:    line(func(p resolver.EvidencePoint) int { return p.Told }),
		Adopted: line(func(p resolver.EvidencePoint) int { return p.Adopted }),
		Stuck:   line(func(p resolver.EvidencePoint) int { return p.Stuck }),
		From:    from,
		Label: fmt.Sprintf("Since %s: adopted %d of %d told, now %d of %d; stuck %d, now %d",
			from.UTC().Format("2006-01-02 15:04 MST"), first.Adopted, first.Told, last.Adopted, last.Told, first.Stuck, last.Stuck),
	}
}
