package notify

import (
	"context"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tidemark-dev/tidemark/resolver"
	"github.com/tidemark-dev/tidemark/resolver/lifecycle"
	"github.com/tidemark-dev/tidemark/resolver/snapshot"
)

// LineClusters counts the active clusters on one line of a source, for a
// line event's data.
type LineClusters func(ctx context.Context, source, line string) (int, error)

// lineCounter is the Deliverer's LineClusters (SetLineClusters); nil: 0.
type lineCounter struct{ fn atomic.Pointer[LineClusters] }

// SetLineClusters sets how a line event counts its clusters (the server,
// which is built after the Deliverer).
func (d *Deliverer) SetLineClusters(fn LineClusters) { d.lines.fn.Store(&fn) }

// lineEvents are the lines that crossed into deprecated or expired
// between prev and next (the leader's swap: one replica announces them,
// once). A line first seen already past a date is no crossing.
func lineEvents(prev, next *snapshot.Snapshot) []resolver.Event {
	changes := next.Lines().Changes(prevLines(prev))
	sources := make([]string, 0, len(changes))
	for src := range changes {
		sources = append(sources, src)
	}
	sort.Strings(sources)
	var out []resolver.Event
	for _, src := range sources {
		for _, l := range changes[src] {
			typ := resolver.EventLineDeprecated
			if l.Class == lifecycle.Expired {
				typ = resolver.EventLineExpired
			}
			e := resolver.Event{Type: typ, Source: src, To: l.Line, Actor: "tidemark"}
			if !l.End.IsZero() {
				e.From = l.End.UTC().Format(time.RFC3339)
			}
			out = append(out, e)
		}
	}
	return out
}

// countLines fills each line event's clusters (Reason) as they are now.
func (d *Deliverer) countLines(ctx context.Context, evs []resolver.Event) {
	for i := range evs {
		e := &evs[i]
		if !isLine(*e) {
			continue
		}
		n := 0
		if fn := d.lines.fn.Load(); fn != nil {
			var err error
			if n, err = (*fn)(ctx, e.Source, e.To); err != nil {
				d.log.Warn("counting a line's clusters failed; its event says 0", "source", e.Source, "line", e.To, "err", err)
			}
		}
		e.Reason = strconv.Itoa(n)
	}
}

func isLine(e resolver.Event) bool {
	return e.Type == resolver.EventLineDeprecated || e.Type == resolver.EventLineExpired
}

// lineData is a line event's data from its outbox row: To the line, From
// the end, Reason the clusters.
func lineData(e resolver.Event) EventData {
	n, _ := strconv.Atoi(e.Reason)
	d := EventData{Source: e.Source, Line: e.To, Clusters: &n}
	if end, err := time.Parse(time.RFC3339, e.From); err == nil {
		d.End = &end
	}
	return d
}

func prevLines(prev *snapshot.Snapshot) *lifecycle.Set {
	if prev == nil {
		return nil
	}
	return prev.Lines()
}
